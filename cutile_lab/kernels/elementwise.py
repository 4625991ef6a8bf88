"""Element-wise kernels: add, mul and saxpy, one tile of the output per kernel instance. Tile size
and hints come from the tuning sweep: on an H100, 512-element tiles on 8 warps stream ~1 point
of bandwidth more than 256 on 4 (one 8-byte access per thread either way, twice the threads in
flight per instance)."""
from cutile_lab.kernels.library import template

BINARY = template('''
@kernel(opt_level=3{hints})
def {name}_{dt}(z: Mut[Tensor[{dt}, "B"]], x: Tensor[{dt}, "?"], y: Tensor[{dt}, "?"]):
    z.store(load_tile_like(x, z) {op} load_tile_like(y, z))
''', name="add", op="+")
ADD = BINARY        # ``ADD.kernel(dt=...)``: the sum (the template's default operator)
OPERATORS = {"add": "+", "mul": "*"}

# Broadcasting (PyTorch's rules), after the host has merged the dimensions that broadcast alike
# into at most three: an operand of size 1 in a dimension is read at index 0 with a tile of 1
# there (``{xi}``/``{xs}``, ``{yi}``/``{ys}``) and broadcast to the output's tile.
BINARY_BROADCAST = template('''
@kernel(opt_level=3{hints})
def {name}_bcast_{dt}(z: Mut[Tensor[{dt}, "B0, B1, B2"]], x: Tensor[{dt}, "?, ?, ?"],
                      y: Tensor[{dt}, "?, ?, ?"]):
    tx = broadcast_to(load_tile(x, ({xi}), ({xs})), (B0, B1, B2))
    ty = broadcast_to(load_tile(y, ({yi}), ({ys})), (B0, B1, B2))
    z.store(tx {op} ty)
''', name="add", op="+")


def broadcast_substitutions(x_full: tuple, y_full: tuple) -> dict:
    """Index and tile shape of each operand of ``BINARY_BROADCAST``: ``*_full[d]`` says whether
    the operand spans the output in dimension ``d`` (else it has size 1 there)."""
    def of(full):
        return (", ".join(f"tile_id({d})" if f else "0" for d, f in enumerate(full)),
                ", ".join(f"B{d}" if f else "1" for d, f in enumerate(full)))
    (xi, xs), (yi, ys) = of(x_full), of(y_full)
    return {"xi": xi, "xs": xs, "yi": yi, "ys": ys}

SAXPY = template('''
@kernel(opt_level=3{hints})
def saxpy_{dt}(z: Mut[Tensor[{dt}, "B"]], x: Tensor[{dt}, "?"], y: Tensor[{dt}, "?"],
               alpha: f32):
    tx = load_tile_like(x, z).astype(f32)
    ty = load_tile_like(y, z).astype(f32)
    z.store((alpha * tx + ty).astype({dt}))
''')
