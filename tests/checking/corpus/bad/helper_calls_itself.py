# expect: TL037 8:5
def again(dst, t):
    again(dst, t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    again(z, t)
    z.store(t)
