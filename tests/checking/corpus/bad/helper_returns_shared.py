# expect: TL010 8:5
def pick(a, b):
    return b


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    pick(z, x).store(t)
    z.store(t)
