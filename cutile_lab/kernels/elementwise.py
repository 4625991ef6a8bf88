"""Element-wise kernels: add and saxpy, one tile of the output per kernel instance. Tile size
and hints come from the tuning sweep: on an H100, 512-element tiles on 8 warps stream ~1 point
of bandwidth more than 256 on 4 (one 8-byte access per thread either way, twice the threads in
flight per instance)."""
from cutile_lab.kernels.library import template

ADD = template('''
@kernel(opt_level=3{hints})
def add_{dt}(z: Mut[Tensor[{dt}, "B"]], x: Tensor[{dt}, "?"], y: Tensor[{dt}, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
''')

SAXPY = template('''
@kernel(opt_level=3{hints})
def saxpy_{dt}(z: Mut[Tensor[{dt}, "B"]], x: Tensor[{dt}, "?"], y: Tensor[{dt}, "?"],
               alpha: f32):
    tx = load_tile_like(x, z).astype(f32)
    ty = load_tile_like(y, z).astype(f32)
    z.store((alpha * tx + ty).astype({dt}))
''')
