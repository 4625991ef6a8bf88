# expect: TL014 8:5
def apply(put, t):
    put(t)
    put(t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    apply(z.store, load_tile_like(x, z))
