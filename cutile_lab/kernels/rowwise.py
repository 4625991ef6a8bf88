"""Row-wise fused kernels: softmax, layernorm and rmsnorm over the last axis.

Each kernel instance owns ``BR`` whole rows (``BN`` is the row length rounded up to a power of
two; the padding columns are masked out of every reduction and never stored). Statistics are
computed in f32 whatever the storage dtype, except softmax's row maximum: the maximum of
storage-dtype values is exact in that dtype, and taking it there keeps a long row's f32 copy out
of the registers for one pass (rows of 32768 f16: 1.15x -> 1.18x PyTorch on an H100). Softmax
pads ragged rows with -inf (``pad="neg_inf"``); rows of a power-of-two length need no padding
(``pad="zero"``), which lets the loads vectorise; likewise layernorm masks the padding columns
out of its variance (``centered``) only when rows are ragged. Each row takes one reciprocal and
multiplies, rather than dividing every element (a division is a multi-instruction sequence on the
GPU).
"""
from dataclasses import dataclass

from cutile_lab.kernel import Kernel
from cutile_lab.kernels.library import template

CENTERED_EXACT = "t - mean"
CENTERED_RAGGED = "where(reshape(arange(BN, dtype=i32) < n, (1, BN)), t - mean, 0.0)"


def substitutions(family: str, dt: str, cols: int, hints: str = "") -> dict:
    """What a row-wise template needs for rows of ``cols`` columns."""
    exact = cols == 1 << max(0, (cols - 1).bit_length())
    subs = {"dt": dt, "hints": hints}
    if family == "softmax":
        subs["pad"] = "zero" if exact else "neg_inf"
    if family == "layernorm":
        subs["centered"] = CENTERED_EXACT if exact else CENTERED_RAGGED
    return subs

SOFTMAX = template('''
@kernel(opt_level=3{hints})
def softmax_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"]):
    t = load_tile_like(x, out, padding="{pad}")
    e = exp2((t.astype(f32) - max(t, axis=1, keepdims=True).astype(f32)) * 1.4426950408889634,
             flush_to_zero=True)
    out.store((e * (1.0 / sum(e, axis=1, keepdims=True))).astype({dt}))
''')

LAYERNORM = template('''
@kernel(opt_level=3{hints})
def layernorm_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                   w: Tensor[{dt}, "?"], b: Tensor[{dt}, "?"], n: i32, eps: f32):
    t = load_tile_like(x, out).astype(f32)
    mean = sum(t, axis=1, keepdims=True) / n
    d = {centered}
    rstd = rsqrt(sum(d * d, axis=1, keepdims=True) / n + eps)
    tw = reshape(load_tile(w, (0,), (BN,)).astype(f32), (1, BN))
    tb = reshape(load_tile(b, (0,), (BN,)).astype(f32), (1, BN))
    out.store((d * rstd * tw + tb).astype({dt}))
''')

RMSNORM = template('''
@kernel(opt_level=3{hints})
def rmsnorm_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                 w: Tensor[{dt}, "?"], n: i32, eps: f32):
    t = load_tile_like(x, out).astype(f32)
    rstd = rsqrt(sum(t * t, axis=1, keepdims=True) / n + eps)
    tw = reshape(load_tile(w, (0,), (BN,)).astype(f32), (1, BN))
    out.store((t * rstd * tw).astype({dt}))
''')


# --- rows longer than one tile ------------------------------------------------------------------
# A row that does not fit one tile (``fits_one_tile``) is done in two launches. The statistics
# kernel gives each instance ``BR`` rows and a group of consecutive column chunks of ``BN``
# and walks them with a running statistic: an online softmax (running maximum, and the sum of
# exponentials rescaled whenever the maximum grows), or a norm's count, mean and centred sum of
# squares merged chunk by chunk (Chan et al.'s parallel update, no E[x²] - E[x]² cancellation).
# Its output is one partial per (row, group): ``G`` groups per row spread a few long rows over
# the whole GPU. The apply kernel gives each instance one (BR, BN) chunk of the output: it merges
# its rows' ``G`` partials (a (BR, G) tile, G a power of two, the padding neutral) and writes the
# chunk. The input is read twice and the output written once, every launch at full width, and
# each kernel's tile is a chunk whatever the row length, so compile time does not grow with it.
# The rows can go in blocks (``block_bytes``, off by default: see ``LONG_ROWS``).

MAX_ROW_TILE_BYTES = 1 << 16      # the whole-row kernels up to 32768 f16 (16384 f32) columns
# tiles and hints of the two launches (``tuning.hints_text`` reads the hints): 4096 columns of a
# row per chunk; the statistics kernel at occupancy 2, the apply kernel at occupancy 4 (64
# registers, four 8 KiB loads in flight per SM, where the compiler's default of 255 registers
# leaves room for one). Measured on an H100 against the same with the statistics kernel at the
# compiler's default, at 2048 or 8192 columns a chunk (benchmarks/results/rowwise-long-*): the
# fastest for all three families at 100,000 and 1,000,000 columns, 1.17-1.37x PyTorch's softmax,
# 1.18x / 6.2x its layer_norm, 1.19x / 5.9x its rms_norm, kernels alone. ``block_bytes``: rows
# in blocks of that many bytes, a launch pair each, so that the apply launch would read its
# input from L2; measured on an H100 (benchmarks/results/rowwise-long-*), 16 MiB blocks ran
# 3-6x slower than one pair for all rows (the launches' host cost dominates), so 0: no blocks
LONG_ROWS = {"BR": 1, "MAX_GROUPS": 64, "block_bytes": 0,
             "stats": {"BN": 4096, "occupancy": 2}, "apply": {"BN": 4096, "occupancy": 4}}


def fits_one_tile(cols: int, itemsize: int) -> bool:
    """Whether a row of ``cols`` columns is one (power-of-two wide) tile of the whole-row
    kernels; longer rows take the chunked kernels."""
    return (1 << max(0, (cols - 1).bit_length())) * itemsize <= MAX_ROW_TILE_BYTES


def long_row_groups(rows: int, cols: int, BR: int, BN: int, target_instances: int) -> int:
    """How many groups ``G`` of consecutive chunks each row's ``ceil(cols / BN)`` chunks split
    into (group ``g`` takes chunks ``g·nch//G`` up to ``(g+1)·nch//G``: none is empty), so that
    about ``target_instances`` instances run."""
    chunks = -(-cols // BN)
    row_blocks = max(1, -(-rows // BR))
    return max(1, min(chunks, LONG_ROWS["MAX_GROUPS"], -(-target_instances // row_blocks)))


@dataclass(frozen=True)
class LongRowPlan:
    """The two launches of rows of ``cols`` columns: kernels, tiles, groups per row."""

    stats: Kernel               # Mut outputs: ``n_stats`` (rows, G) f32 tensors, tiles (BR, 1)
    apply: Kernel               # Mut output: the result, tiles (BR, BN_apply)
    n_stats: int
    BR: int
    BN_stats: int
    BN_apply: int
    G: int                      # groups per row (the stats' columns)
    nch: int                    # chunks of BN_stats per row
    block_rows: int             # rows per (statistics, apply) pair of launches

    @property
    def G_tile(self) -> int:
        """The apply kernel's tile of the groups: G rounded up to a power of two."""
        return 1 << max(0, (self.G - 1).bit_length())


def long_row_plan(family: str, dt: str, rows: int, cols: int, sm_count: int,
                  BR: int | None = None, cfg: dict | None = None,
                  itemsize: int = 2) -> LongRowPlan:
    """What the host launches for rows of ``cols`` columns that do not fit one tile
    (``cfg`` defaults to ``LONG_ROWS``): blocks of rows of about ``block_bytes`` (0: all rows
    at once), so that the apply launch finds its block of the input still in L2 after the
    statistics launch read it, and about four statistics instances per SM for each block."""
    from cutile_lab.kernels.tuning import hints_text
    cfg = cfg or LONG_ROWS
    BR = BR or cfg.get("BR", LONG_ROWS["BR"])
    BNs, BNa = cfg["stats"]["BN"], cfg["apply"]["BN"]
    block = cfg.get("block_bytes", 0)
    block_rows = rows if not block else max(BR, block // max(1, cols * itemsize) // BR * BR)
    block_rows = max(1, min(rows, block_rows))
    stats_t, apply_t, n_stats = LONG_KERNELS[family]
    return LongRowPlan(
        stats_t.kernel(**long_substitutions(family, dt, cols, BNs, hints_text(cfg["stats"]))),
        apply_t.kernel(**long_substitutions(family, dt, cols, BNa, hints_text(cfg["apply"]))),
        n_stats, BR, BNs, BNa, long_row_groups(block_rows, cols, BR, BNs, 4 * sm_count),
        -(-cols // BNs), block_rows)


def long_substitutions(family: str, dt: str, cols: int, BN: int, hints: str = "") -> dict:
    """What a long-row template needs for rows of ``cols`` columns in chunks of ``BN``: the
    masks of a ragged last chunk exist only where there is one."""
    subs = {"dt": dt, "hints": hints}
    if family == "softmax":
        # loads padded with zeros (the copy engine's fill; a -inf fill takes a slower path,
        # measured on an H100), the padding then masked to -1e30 where the last chunk is ragged
        load = "load_tile(x, (r, j), (BR, BN)).astype(f32)"
        subs["chunk"] = load if cols % BN == 0 else \
            f"where(reshape(arange(BN, dtype=i32) + j * BN < n, (1, BN)), {load}, -1.0e30)"
    if family == "layernorm":
        subs["centered"] = "t - mj" if cols % BN == 0 else \
            "where(reshape(arange(BN, dtype=i32) + j * BN < n, (1, BN)), t - mj, 0.0)"
    return subs


SOFTMAX_STATS = template('''
@kernel(opt_level=3{hints})
def softmax_stats_{dt}(m: Mut[Tensor[f32, "BR, 1"]], s: Mut[Tensor[f32, "BR, 1"]],
                       x: Tensor[{dt}, "?, ?"], n: i32, nch: i32, groups: i32,
                       BN: Const[int] = 4096):
    r = tile_id(0)
    g = tile_id(1)
    mx = full((BR, 1), -1.0e30, dtype=f32)
    sm = full((BR, 1), 0.0, dtype=f32)
    for j in range(g * nch // groups, (g + 1) * nch // groups):
        t = {chunk}
        m_new = maximum(mx, max(t, axis=1, keepdims=True))
        e = exp2((t - m_new) * 1.4426950408889634, flush_to_zero=True)
        sm = sm * exp2((mx - m_new) * 1.4426950408889634) + sum(e, axis=1, keepdims=True)
        mx = m_new
    m.store(mx)
    s.store(sm)
''')

SOFTMAX_APPLY = template('''
@kernel(opt_level=3{hints})
def softmax_apply_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                       m: Tensor[f32, "?, ?"], s: Tensor[f32, "?, ?"], G: Const[int] = 1):
    pm = load_tile(m, (tile_id(0), 0), (BR, G), padding="neg_inf")
    ps = load_tile(s, (tile_id(0), 0), (BR, G))
    mx = max(pm, axis=1, keepdims=True)
    inv = 1.0 / sum(ps * exp2((pm - mx) * 1.4426950408889634), axis=1, keepdims=True)
    t = load_tile_like(x, out).astype(f32)
    out.store((exp2((t - mx) * 1.4426950408889634, flush_to_zero=True) * inv).astype({dt}))
''')

LAYERNORM_STATS = template('''
@kernel(opt_level=3{hints})
def layernorm_stats_{dt}(mean: Mut[Tensor[f32, "BR, 1"]], m2: Mut[Tensor[f32, "BR, 1"]],
                         cnt: Mut[Tensor[f32, "BR, 1"]], x: Tensor[{dt}, "?, ?"], n: i32,
                         nch: i32, groups: i32, BN: Const[int] = 4096):
    r = tile_id(0)
    g = tile_id(1)
    mu = full((BR, 1), 0.0, dtype=f32)
    q = full((BR, 1), 0.0, dtype=f32)
    c = full((BR, 1), 0.0, dtype=f32)
    for j in range(g * nch // groups, (g + 1) * nch // groups):
        t = load_tile(x, (r, j), (BR, BN)).astype(f32)
        cj = minimum(maximum(full((1, 1), 0.0, dtype=f32) + (n - j * BN), 0.0), BN * 1.0)
        mj = sum(t, axis=1, keepdims=True) / maximum(cj, 1.0)
        d = {centered}
        tot = c + cj
        delta = mj - mu
        frac = cj / maximum(tot, 1.0)
        mu = mu + delta * frac
        q = q + sum(d * d, axis=1, keepdims=True) + delta * delta * c * frac
        c = tot
    mean.store(mu)
    m2.store(q)
    cnt.store(c)
''')

LAYERNORM_APPLY = template('''
@kernel(opt_level=3{hints})
def layernorm_apply_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                         w: Tensor[{dt}, "?"], b: Tensor[{dt}, "?"], mean: Tensor[f32, "?, ?"],
                         m2: Tensor[f32, "?, ?"], cnt: Tensor[f32, "?, ?"], n: i32, eps: f32,
                         G: Const[int] = 1):
    pc = load_tile(cnt, (tile_id(0), 0), (BR, G))
    pmu = load_tile(mean, (tile_id(0), 0), (BR, G))
    pq = load_tile(m2, (tile_id(0), 0), (BR, G))
    mu = sum(pc * pmu, axis=1, keepdims=True) / n
    dm = pmu - mu
    rstd = rsqrt(sum(pq + pc * dm * dm, axis=1, keepdims=True) / n + eps)
    t = load_tile_like(x, out).astype(f32)
    tw = reshape(load_tile(w, (tile_id(1),), (BN,)).astype(f32), (1, BN))
    tb = reshape(load_tile(b, (tile_id(1),), (BN,)).astype(f32), (1, BN))
    out.store(((t - mu) * rstd * tw + tb).astype({dt}))
''')

RMSNORM_STATS = template('''
@kernel(opt_level=3{hints})
def rmsnorm_stats_{dt}(ss: Mut[Tensor[f32, "BR, 1"]], x: Tensor[{dt}, "?, ?"],
                       nch: i32, groups: i32, BN: Const[int] = 4096):
    r = tile_id(0)
    g = tile_id(1)
    acc = full((BR, 1), 0.0, dtype=f32)
    for j in range(g * nch // groups, (g + 1) * nch // groups):
        t = load_tile(x, (r, j), (BR, BN)).astype(f32)
        acc = acc + sum(t * t, axis=1, keepdims=True)
    ss.store(acc)
''')

RMSNORM_APPLY = template('''
@kernel(opt_level=3{hints})
def rmsnorm_apply_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                       w: Tensor[{dt}, "?"], ss: Tensor[f32, "?, ?"], n: i32, eps: f32,
                       G: Const[int] = 1):
    total = sum(load_tile(ss, (tile_id(0), 0), (BR, G)), axis=1, keepdims=True)
    rstd = rsqrt(total / n + eps)
    t = load_tile_like(x, out).astype(f32)
    tw = reshape(load_tile(w, (tile_id(1),), (BN,)).astype(f32), (1, BN))
    out.store((t * rstd * tw).astype({dt}))
''')

# per family: (statistics template, apply template, number of statistics tensors)
LONG_KERNELS = {"softmax": (SOFTMAX_STATS, SOFTMAX_APPLY, 2),
                "layernorm": (LAYERNORM_STATS, LAYERNORM_APPLY, 3),
                "rmsnorm": (RMSNORM_STATS, RMSNORM_APPLY, 1)}
