# expect: TL011 6:5
import cuda.tile as ctile


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    ctile.store(z, (tile_id(0) + 1,), load_tile_like(x, z))
