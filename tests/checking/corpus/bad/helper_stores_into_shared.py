# expect: TL010 8:5
def write(dst, t):
    dst.store(t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    write(x, t)
    z.store(t)
