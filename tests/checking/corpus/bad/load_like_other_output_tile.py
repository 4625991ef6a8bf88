# expect: TL024 4:13
def k(z: Mut[Tensor[f32, "B"]], y: Mut[Tensor[f32, "C"]], x: Tensor[f32, "?"]):
    y.store(load_tile_like(x, y))
    z.store(load_tile_like(y, z))
