# expect: TL010 4:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    x.store(t)
    z.store(t)
