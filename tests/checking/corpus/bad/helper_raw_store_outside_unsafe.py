# expect: TL011 7:5
def shifted(dst, t):
    store(dst, (tile_id(0) + 1,), t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    shifted(z, load_tile_like(x, z))
