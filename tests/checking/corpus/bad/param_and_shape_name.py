# expect: TL003 2:33
def k(z: Mut[Tensor[f32, "B"]], B: Tensor[f32, "?"]):
    z.store(load_tile_like(B, z))
