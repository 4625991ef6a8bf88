# expect: TL014 6:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    store = z.store
    store(t)
    store(t + 1.0)
