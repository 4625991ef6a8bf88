# expect: TL017 3:13
def k(z: Mut[Tensor[f16, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
