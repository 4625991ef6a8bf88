# expect: TL018 3:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f16, "?"]):
    z.store(load_tile_like(x, z))
