# expect: TL037 7:5
from mylib import helper


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    helper(x, t)
    z.store(t)
