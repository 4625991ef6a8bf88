# expect: TL021 4:24
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    u = load_tile_like(t, z)
    z.store(u)
