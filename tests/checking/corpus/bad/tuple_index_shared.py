# expect: TL010 6:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    pair = (z, x)
    pair[0].store(t)
    pair[1].store(t)
