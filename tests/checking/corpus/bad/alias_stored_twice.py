# expect: TL014 6:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    w = z
    w.store(t)
    w.store(t * 2.0)
