"""Launch snippets for the launch-level rules, run through the catalog's host model
(``cutile_lab.catalog.SimHost``): each with the code it must produce and the line and
1-based column of the primary span (the kernel's name in the launch line, or the host access)."""
from __future__ import annotations

from dataclasses import dataclass

DOUBLE = '''def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) * 2.0)
'''

ADD2D = '''def add2(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], y: Tensor[f32, "?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''

SPLIT = '''def split(pos: Mut[Tensor[f32, "B"]], neg: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, pos)
    pos.store(maximum(t, 0.0))
    neg.store(minimum(t, 0.0))
'''

GEMM = '''def gemm(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, K"], b: Tensor[f16, "K, ?"],
         BK: Const[int] = 32):
    acc = zeros((BM, BN), dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        acc = mma(load_tile(a, (tile_id(0), k), (BM, BK)),
                  load_tile(b, (k, tile_id(1)), (BK, BN)), acc)
    c.store(acc)
'''


@dataclass(frozen=True)
class Launch:
    name: str
    code: str | None     # None: a good launch, no diagnostic at all
    line: int
    col: int
    text: str


LAUNCHES: list[Launch] = []


def launch(name: str, code: str | None, line: int, col: int, kernel: str, body: str) -> None:
    LAUNCHES.append(Launch(name, code, line, col, kernel + "\n" + body.lstrip("\n")))


# --- good launches ---------------------------------------------------------------------------
launch("double_ok", None, 0, 0, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
double(out.partition((128,)), x).sync()
''')
launch("disjoint_halves", None, 0, 0, DOUBLE, '''
buf = tensor((4096,), f32)
double(buf[:2048].partition((128,)), buf[2048:])
''')
launch("even_odd_views", None, 0, 0, DOUBLE, '''
buf = tensor((4096,), f32)
double(buf[::2].partition((128,)), buf[1::2])
''')
launch("column_blocks", None, 0, 0, ADD2D, '''
m = tensor((256, 256), f32)
add2(m[:, :128].partition((64, 64)), m[:, 128:], m[:, 128:])
''')
launch("same_input_twice", None, 0, 0, ADD2D, '''
x = tensor((256, 256), f32)
out = tensor((256, 256), f32)
add2(out.partition((64, 64)), x, x)
''')
launch("gemm_ok", None, 0, 0, GEMM, '''
a = tensor((512, 256), f16)
b = tensor((256, 1024), f16)
c = tensor((512, 1024), f32)
gemm(c.partition((128, 128)), a, b)
''')
launch("sync_then_host", None, 0, 0, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
op = double(out.partition_mut((128,)), x)
op.sync()
out.numpy()
x.fill(1.0)
''')
launch("two_readers", None, 0, 0, DOUBLE, '''
x = tensor((4096,), f32)
a = tensor((4096,), f32)
b = tensor((4096,), f32)
first = double(a.partition_mut((128,)), x)
second = double(b.partition_mut((128,)), x)
x.numpy()
''')
launch("unpartition", None, 0, 0, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
parts = out.partition((128,))
double(parts, x).sync()
out = parts.unpartition()
out.fill(0.0)
''')

# --- bad launches ----------------------------------------------------------------------------
launch("same_tensor_in_and_out", "TL100", 5, 1, DOUBLE, '''
buf = tensor((4096,), f32)
double(buf.partition_mut((128,)), buf)
''')
launch("overlapping_slices", "TL100", 5, 1, DOUBLE, '''
buf = tensor((4096,), f32)
double(buf[:2048].partition((128,)), buf[1024:3072])
''')
launch("reversed_view", "TL100", 5, 1, DOUBLE, '''
buf = tensor((4096,), f32)
double(buf.partition_mut((128,)), buf[::-1])
''')
launch("transposed_view", "TL100", 6, 1, ADD2D, '''
m = tensor((256, 256), f32)
y = tensor((256, 256), f32)
add2(m.partition_mut((64, 64)), m.T, y)
''')
launch("column_overlap", "TL100", 5, 1, ADD2D, '''
m = tensor((256, 256), f32)
add2(m[:, :192].partition((64, 64)), m[:, 128:], m[:, 128:])
''')
launch("two_outputs_same", "TL101", 8, 1, SPLIT, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
split(out.partition_mut((128,)), out.partition_mut((128,)), x)
''')
launch("moved_then_read", "TL102", 8, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
parts = out.partition((128,))
double(parts, x).sync()
out.numpy()
''')
launch("moved_then_launched", "TL102", 7, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
parts = out.partition((128,))
double(tensor((4096,), f32).partition((128,)), out)
''')
launch("read_while_written", "TL103", 7, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
op = double(out.partition_mut((128,)), x)
out.numpy()
''')
launch("write_while_written", "TL103", 7, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
op = double(out.partition_mut((128,)), x)
out.fill(0.0)
''')
launch("launch_reads_in_flight_output", "TL104", 8, 10, DOUBLE, '''
x = tensor((4096,), f32)
mid = tensor((4096,), f32)
out = tensor((4096,), f32)
first = double(mid.partition_mut((128,)), x)
second = double(out.partition_mut((128,)), mid)
''')
launch("write_input_in_flight", "TL105", 7, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
op = double(out.partition_mut((128,)), x)
x.fill(0.0)
''')
launch("launch_writes_in_flight_input", "TL105", 7, 7, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
op = double(out.partition_mut((128,)), x)
op2 = double(x.partition_mut((128,)), out[:0])
''')
ROW_COPY_FIXED = '''def row_copy(z: Mut[Tensor[f32, "1, 128"]], x: Tensor[f32, "?, 128"]):
    z.store(load_tile_like(x, z))
'''
ROW_COPY_N = '''def row_copy(z: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, 64"]):
    z.store(load_tile_like(x, z))
'''
launch("fixed_tile_mismatch", "TL110", 6, 1, ROW_COPY_FIXED, '''
x = tensor((64, 128), f32)
out = tensor((64, 128), f32)
row_copy(out.partition((1, 64)), x)
''')
launch("fixed_input_dim", "TL110", 6, 1, ROW_COPY_N, '''
x = tensor((64, 128), f32)
out = tensor((64, 128), f32)
row_copy(out.partition((1, 64)), x)
''')
launch("generic_conflict", "TL111", 12, 1, GEMM, '''
a = tensor((512, 256), f16)
b = tensor((128, 1024), f16)
c = tensor((512, 1024), f32)
gemm(c.partition((128, 128)), a, b)
''')
launch("dtype_mismatch", "TL112", 6, 1, DOUBLE, '''
x = tensor((4096,), f16)
out = tensor((4096,), f32)
double(out.partition((128,)), x)
''')
launch("rank_mismatch", "TL113", 6, 1, DOUBLE, '''
x = tensor((64, 64), f32)
out = tensor((4096,), f32)
double(out.partition((128,)), x)
''')
launch("ragged", "TL114", 6, 1, DOUBLE, '''
x = tensor((1000,), f32)
out = tensor((1000,), f32)
double(out.partition((128,)), x)
''')
launch("unpartitioned_output", "TL115", 6, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
double(out, x)
''')
launch("partitioned_input", "TL116", 6, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
double(out.partition((128,)), x.partition_mut((128,)))
''')
launch("missing_argument", "TL117", 5, 1, DOUBLE, '''
out = tensor((4096,), f32)
double(out.partition((128,)))
''')
launch("unknown_keyword", "TL117", 6, 1, DOUBLE, '''
x = tensor((4096,), f32)
out = tensor((4096,), f32)
double(out.partition((128,)), x, w=x)
''')
launch("scalar_for_tensor", "TL118", 5, 1, DOUBLE, '''
out = tensor((4096,), f32)
double(out.partition((128,)), 2.0)
''')
launch("grids_differ", "TL119", 9, 1, SPLIT, '''
x = tensor((4096,), f32)
pos = tensor((4096,), f32)
neg = tensor((2048,), f32)
split(pos.partition((128,)), neg.partition((128,)), x)
''')
launch("input_shorter_than_output", "TL120", 6, 1, DOUBLE, '''
x = tensor((2048,), f32)
out = tensor((4096,), f32)
double(out.partition((128,)), x)
''')

# --- plain cuTile kernels: no roles to check, but aliasing and the grid -------------------------
CT_DOUBLE = '''import cuda.tile as ct


@ct.kernel
def double(z, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.store(z, index=(ct.bid(0),), tile=t * 2)
'''
launch("cutile_ok", None, 0, 0, CT_DOUBLE, '''
x = tensor((1024,), f32)
z = tensor((1024,), f32)
double(z, x, 128, grid=(8,))
''')
launch("cutile_input_passed_twice_ok", None, 0, 0, CT_DOUBLE, '''
x = tensor((1024,), f32)
double(tensor((1024,), f32), x, 128, grid=(8, 1))
''')
launch("cutile_written_array_as_input", "TL100", 10, 1, CT_DOUBLE, '''
z = tensor((1024,), f32)
double(z, z, 128, grid=(8,))
''')
launch("cutile_grid_axis_never_read", "TL121", 11, 1, CT_DOUBLE, '''
x = tensor((1024,), f32)
z = tensor((1024,), f32)
double(z, x, 128, grid=(8, 2))
''')
launch("tile_grid_other_than_partition", "TL122", 5, 1, DOUBLE, '''
x = tensor((4096,), f32)
double(tensor((4096,), f32).partition((128,)), x, grid=(32, 2))
''')
launch("tile_grid_as_partition", None, 0, 0, DOUBLE, '''
x = tensor((4096,), f32)
double(tensor((4096,), f32).partition((128,)), x, grid=(32, 1))
''')
launch("output_rows_overlap", "TL123", 6, 1, ADD2D, '''
x = tensor((4, 256), f32)
buf = tensor((1024,), f32)
add2(buf.as_strided((4, 256), (16, 1)).partition((1, 256)), x, x)
''')
launch("output_rows_apart", None, 0, 0, ADD2D, '''
x = tensor((4, 256), f32)
buf = tensor((1024,), f32)
add2(buf.as_strided((4, 256), (256, 1)).partition((1, 256)), x, x)
''')
