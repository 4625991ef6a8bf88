# expect: TL037 7:5
def again(z, x):
    k(z, x)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    again(z, x)
    z.store(load_tile_like(x, z))
