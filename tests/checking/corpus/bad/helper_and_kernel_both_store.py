# expect: TL014 9:5
def write(dst, t):
    dst.store(t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    write(z, t)
    z.store(t)
