# expect: TL011 6:5
from cuda.tile import store as put


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    put(z, (tile_id(0) + 1,), load_tile_like(x, z))
