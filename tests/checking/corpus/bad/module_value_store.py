# expect: TL038 6:5
G = None


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    G.store(load_tile_like(x, z))
    z.store(load_tile_like(x, z))
