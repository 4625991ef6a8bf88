# expect: TL038 3:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    Tensor.store(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
