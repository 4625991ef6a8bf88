"""Kernels for the checker's tests: good ones (no error, no warning) and bad ones, each bad one
with the code it must produce and where (line and 1-based column of the primary span, in the
kernel's own text)."""
from __future__ import annotations

from dataclasses import dataclass

GOOD: dict[str, str] = {}


def good(name: str, text: str) -> None:
    GOOD[name] = text.lstrip("\n")


good("vector_add", '''
def vector_add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
''')

good("add_2d", '''
def add_2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], y: Tensor[f32, "?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
''')

good("softmax", '''
def softmax(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"]):
    t = load_tile_like(x, out)
    m = max(t, axis=1, keepdims=True)
    e = exp(t - m)
    out.store(e / sum(e, axis=1, keepdims=True))
''')

good("layernorm", '''
def layernorm(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"], w: Tensor[f32, "N"],
              b: Tensor[f32, "N"], eps: f32):
    t = load_tile_like(x, out)
    mean = sum(t, axis=1, keepdims=True) / N
    d = t - mean
    var = sum(d * d, axis=1, keepdims=True) / N
    tw = reshape(load_tile(w, (0,), (N,)), (1, N))
    tb = reshape(load_tile(b, (0,), (N,)), (1, N))
    out.store(d * rsqrt(var + eps) * tw + tb)
''')

good("rmsnorm", '''
def rmsnorm(out: Mut[Tensor[bf16, "1, N"]], x: Tensor[bf16, "?, N"], w: Tensor[bf16, "N"],
            eps: f32):
    t = load_tile_like(x, out).astype(f32)
    ms = sum(t * t, axis=1, keepdims=True) / N
    tw = reshape(load_tile(w, (0,), (N,)), (1, N)).astype(f32)
    y = t * rsqrt(ms + eps) * tw
    out.store(y.astype(bf16))
''')

good("gemm", '''
def gemm(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
         BK: Const[int] = 32):
    acc = full((BM, BN), 0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc)
''')

good("gemm_f16_out", '''
def gemm_f16(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
             BK: Const[int] = 64):
    acc = zeros((BM, BN), dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        acc = mma(load_tile(a, (tile_id(0), k), (BM, BK)),
                  load_tile(b, (k, tile_id(1)), (BK, BN)), acc)
    c.store(acc.astype(f16))
''')

good("transpose", '''
def transpose_tiles(out: Mut[Tensor[f32, "BN, BM"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(1), tile_id(0)), (BM, BN))
    out.store(transpose(t))
''')

good("row_sum_loop", '''
def row_sum(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"], BK: Const[int] = 128):
    acc = zeros((BM, 1), dtype=f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        t = load_tile(x, (tile_id(0), k), (BM, BK))
        acc = acc + sum(t, axis=1, keepdims=True)
    out.store(acc)
''')

good("unsafe_store", '''
def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        store(z, index=(tile_id(0),), tile=t * 2.0)
''')

good("unsafe_atomic", '''
def count_positive(counts: Mut[Tensor[i32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, counts)
    idx = tile_id(0) * B + arange(B, dtype=i32)
    with unsafe():
        atomic_add(counts, (idx,), where(t > 0, 1, 0))
''')

good("saxpy", '''
def saxpy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z) + load_tile_like(y, z))
''')

good("const_param", '''
def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], K: Const[int] = 4):
    z.store(load_tile_like(x, z) * K)
''')

good("f16_scaled", '''
def scaled_f16(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
    t = load_tile_like(x, z).astype(f32)
    z.store((t * alpha).astype(f16))
''')

good("relu_where", '''
def relu(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z)
    z.store(where(t > 0, t, 0.0))
''')

good("branches", '''
def sign_flip(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    t = load_tile_like(x, z)
    if alpha > 0:
        z.store(t)
    else:
        z.store(-t)
''')

good("read_modify_write", '''
def accumulate(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(z.load() + load_tile_like(x, z))
''')

good("early_return", '''
def clamp_or_copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], lo: f32):
    t = load_tile_like(x, z)
    if lo < 0:
        z.store(t)
        return
    z.store(maximum(t, lo))
''')

good("batched_3d", '''
def batched_add(z: Mut[Tensor[f32, "1, BM, BN"]], x: Tensor[f32, "?, ?, ?"],
                y: Tensor[f32, "?, ?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
''')

good("two_outputs", '''
def split_sign(pos: Mut[Tensor[f32, "B"]], neg: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, pos)
    pos.store(maximum(t, 0.0))
    neg.store(minimum(t, 0.0))
''')

good("matmul_operator", '''
def small_matmul(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
                 BK: Const[int] = 32):
    ta = load_tile(a, (tile_id(0), 0), (BM, BK))
    tb = load_tile(b, (0, tile_id(1)), (BK, BN))
    c.store(ta @ tb)
''')

good("gelu", '''
def gelu(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    inner = 0.7978845608 * (t + 0.044715 * t * t * t)
    z.store(0.5 * t * (1.0 + tanh(inner)))
''')

good("static_loop", '''
def poly(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    acc = zeros((B,), dtype=f32)
    for i in range(4):
        acc = acc * t + 1.0
    z.store(acc)
''')

good("argmax_rows", '''
def row_argmax(idx: Mut[Tensor[i32, "BM, 1"]], x: Tensor[f32, "?, N"]):
    t = load_tile(x, (tile_id(0), 0), (BM, N))
    idx.store(argmax(t, axis=1, keepdims=True))
''')

good("cutile_add", '''
import cuda.tile as ct

@ct.kernel
def add(z, x, y, B: ct.Constant[int]):
    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ty = ct.load(y, index=(ct.bid(0),), shape=(B,))
    ct.store(z, index=(ct.bid(0),), tile=tx + ty)
''')

good("cutile_matmul", '''
import cuda.tile as ct

@ct.kernel
def matmul(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.full((BM, BN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(BM, BK))):
        a = ct.load(A, index=(bm, k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))
''')

good("module_constant", '''
SCALE = 0.5

def halve(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) * SCALE)
''')


@dataclass(frozen=True)
class Bad:
    name: str
    code: str
    line: int          # of the primary span, 1-based, in the text
    col: int           # 1-based
    text: str
    level: str = "kernel"


BAD: list[Bad] = []


def bad(name: str, code: str, line: int, col: int, text: str) -> None:
    BAD.append(Bad(name, code, line, col, text.lstrip("\n")))


bad("bad_annotation", "TL001", 1, 36, '''
def k(z: Mut[Tensor[f32, "B"]], x: list):
    z.store(load_tile_like(x, z))
''')

bad("varargs", "TL002", 1, 34, '''
def k(z: Mut[Tensor[f32, "B"]], *xs):
    z.store(full((B,), 0, dtype=f32))
''')

bad("param_and_shape_name", "TL003", 1, 33, '''
def k(z: Mut[Tensor[f32, "B"]], B: Tensor[f32, "?"]):
    z.store(load_tile_like(B, z))
''')

bad("unknown_kernel_option", "TL004", 1, 9, '''
@kernel(schedul="persistent")
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
''')

bad("kernel_option_not_a_literal", "TL004", 1, 19, '''
@kernel(occupancy=OCC)
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
''')

bad("reverse_and_persistent", "TL004", 1, 9, '''
@kernel(tile_order="reverse", schedule="persistent")
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
''')

bad("store_into_shared", "TL010", 3, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    x.store(t)
    z.store(t)
''')

bad("raw_store_outside_unsafe", "TL011", 3, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    store(z, index=(tile_id(0) + 1,), tile=t)
''')

bad("ct_store_outside_unsafe", "TL011", 3, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    ct.store(z, index=(0,), tile=t)
''')

bad("atomic_outside_unsafe", "TL011", 3, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    atomic_add(z, (0,), t)
''')

bad("bid_outside_unsafe", "TL011", 2, 23, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(x, (bid(0),), (B,))
    z.store(t)
''')

bad("needless_unsafe", "TL012", 3, 10, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        z.store(t * 2.0)
''')

bad("never_stored", "TL013", 1, 7, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z) * 2.0
''')

bad("stored_twice", "TL014", 4, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t)
    z.store(t * 2.0)
''')

bad("stored_in_loop", "TL014", 4, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    for i in range(3):
        z.store(t)
''')

bad("stored_on_some_paths", "TL015", 4, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    t = load_tile_like(x, z)
    if alpha > 0:
        z.store(t)
''')

bad("return_before_store", "TL015", 6, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    t = load_tile_like(x, z)
    if alpha > 0:
        return
    t = t * alpha
    z.store(t)
''')

bad("store_shape_reduced", "TL016", 4, 15, '''
def k(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), 0), (BM, 128))
    s = sum(t, axis=1)
    out.store(s)
''')

bad("store_shape_transposed", "TL016", 3, 13, '''
def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), tile_id(1)), (BN, BM))
    z.store(t)
''')

bad("store_scalar", "TL016", 2, 13, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(0.0)
''')

bad("store_fixed_shape", "TL016", 2, 13, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(full((64,), 1.0, dtype=f32))
''')

bad("store_narrowing_dtype", "TL017", 3, 13, '''
def k(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
    t = load_tile_like(x, z)
    z.store(alpha * t)
''')

bad("store_int_into_float16", "TL017", 2, 13, '''
def k(z: Mut[Tensor[f16, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
''')

bad("store_widening_dtype", "TL018", 2, 13, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f16, "?"]):
    z.store(load_tile_like(x, z))
''')

bad("unsafe_write_to_shared", "TL019", 4, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        atomic_add(x, (tile_id(0) * B + arange(B, dtype=i32),), t)
    z.store(t)
''')

bad("load_like_not_output", "TL020", 2, 27, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    t = load_tile_like(x, y)
    z.store(t)
''')

bad("load_like_from_tile", "TL021", 3, 24, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    u = load_tile_like(t, z)
    z.store(u)
''')

bad("load_like_rank", "TL022", 2, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z)
    z.store(t)
''')

bad("load_tile_index_length", "TL023", 2, 22, '''
def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0),), (BM, BN))
    z.store(t)
''')

bad("load_tile_from_output", "TL024", 2, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(z, (tile_id(0) + 1,), (B,))
    z.store(t + load_tile_like(x, z))
''')

bad("shared_load_method", "TL025", 2, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = x.load()
    z.store(t)
''')

bad("numpy_style_method", "TL025", 3, 13, '''
def k(z: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), 0), (BM, 64))
    z.store(t.sum(axis=1, keepdims=True))
''')

bad("output_typo_method", "TL025", 3, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.stor(t)
''')

bad("reassigned_param", "TL026", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    x = load_tile_like(x, z)
    z.store(x)
''')

bad("python_max", "TL027", 3, 13, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx, ty = load_tile_like(x, z), load_tile_like(y, z)
    z.store(max(tx, ty))
''')

bad("unknown_padding", "TL028", 2, 38, '''
def k(z: Mut[Tensor[f32, "1, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z, padding="-inf")
    z.store(t)
''')

bad("unknown_name", "TL030", 2, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = lod_tile_like(x, z)
    z.store(t)
''')

bad("python_builtin", "TL030", 3, 13, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(round(t))
''')

bad("unknown_ct_attr", "TL030", 3, 13, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(ct.expp(t))
''')

bad("while_loop", "TL031", 4, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    i = 0
    while i < 4:
        t = t * 2.0
        i = i + 1
    z.store(t)
''')

bad("try_block", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    try:
        z.store(load_tile_like(x, z))
    except Exception:
        pass
''')

bad("nested_def", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    def twice(t):
        return t * 2.0
    z.store(twice(load_tile_like(x, z)))
''')

bad("lambda", "TL031", 2, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    f = lambda t: t * 2.0
    z.store(f(load_tile_like(x, z)))
''')

bad("class_in_kernel", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    class Box:
        pass
    z.store(load_tile_like(x, z))
''')

bad("global_stmt", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    global COUNT
    z.store(load_tile_like(x, z))
''')

bad("yield", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    yield load_tile_like(x, z)
    z.store(load_tile_like(x, z))
''')

bad("return_value", "TL031", 3, 12, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
    return load_tile_like(x, z)
''')

bad("import_in_body", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    import math
    z.store(load_tile_like(x, z) * math.pi)
''')

bad("del_stmt", "TL031", 4, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t)
    del t
''')

bad("starred_assign", "TL031", 2, 8, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    a, *rest = (1, 2, 3)
    z.store(load_tile_like(x, z) * a)
''')

bad("list_literal", "TL031", 2, 14, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    scales = [1.0, 2.0]
    z.store(load_tile_like(x, z))
''')

bad("for_over_tuple", "TL031", 3, 14, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    for s in (1.0, 2.0):
        t = t * s
    z.store(t)
''')

bad("async_def", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    async def helper():
        pass
    z.store(load_tile_like(x, z))
''')

bad("recursion", "TL032", 3, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], n: i32):
    if n > 0:
        k(z, x, n - 1)
    z.store(load_tile_like(x, z))
''')

bad("print_tile", "TL033", 3, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    print(f"t = {t}")
    z.store(t)
''')

bad("cl_prefix", "TL034", 2, 9, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = cl.load_tile_like(x, z)
    z.store(t)
''')

bad("rank_4_output", "TL040", 1, 7, '''
def k(z: Mut[Tensor[f32, "1, 1, BM, BN"]], x: Tensor[f32, "?, ?, ?, ?"]):
    z.store(load_tile_like(x, z))
''')

bad("outputs_ranks_differ", "TL041", 1, 33, '''
def k(z: Mut[Tensor[f32, "B"]], w: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
    w.store(full((BM, BN), 0, dtype=f32))
''')

bad("no_output", "TL042", 1, 1, '''
def k(x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    t = load_tile(x, (tile_id(0),), (128,))
''')

bad("cutile_race", "TL060", 6, 23, '''
import cuda.tile as ct

@ct.kernel
def shift(z, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.store(z, index=(ct.bid(0) + 1,), tile=t)
''')

bad("cutile_partial_index", "TL060", 7, 23, '''
import cuda.tile as ct

@ct.kernel
def rows(z, x, BM: ct.Constant[int], BN: ct.Constant[int]):
    j = ct.bid(1)
    t = ct.load(x, index=(ct.bid(0), j), shape=(BM, BN))
    ct.store(z, index=(ct.bid(0), 0), tile=t)
''')

bad("cutile_atomic", "TL061", 6, 5, '''
import cuda.tile as ct

@ct.kernel
def total(out, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.atomic_add(out, (0,), ct.sum(t))
''')

bad("cutile_read_write", "TL062", 6, 5, '''
import cuda.tile as ct

@ct.kernel
def inc(a, B: ct.Constant[int]):
    t = ct.load(a, index=(ct.bid(0),), shape=(B,))
    ct.store(a, index=(ct.bid(0),), tile=t + 1)
''')

bad("syntax_error", "TL000", 2, 12, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store((load_tile_like(x, z))
''')

bad("numpy_call", "TL030", 5, 9, '''
import numpy as np

def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    e = np.exp(t)
    z.store(e)
''')

bad("subscript_assign_output", "TL031", 2, 5, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z[:] = load_tile_like(x, z)
''')

bad("index_tensor", "TL031", 2, 36, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + x[0])
''')

bad("return_param", "TL031", 3, 12, '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
    return z
''')
