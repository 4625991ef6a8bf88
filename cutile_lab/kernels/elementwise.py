"""Element-wise kernels: add and saxpy, one tile of the output per kernel instance."""
from cutile_lab.kernels.library import template

ADD = template('''
def add_{dt}(z: Mut[Tensor[{dt}, "B"]], x: Tensor[{dt}, "?"], y: Tensor[{dt}, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
''')

SAXPY = template('''
def saxpy_{dt}(z: Mut[Tensor[{dt}, "B"]], x: Tensor[{dt}, "?"], y: Tensor[{dt}, "?"],
               alpha: f32):
    tx = load_tile_like(x, z).astype(f32)
    ty = load_tile_like(y, z).astype(f32)
    z.store((alpha * tx + ty).astype({dt}))
''')
