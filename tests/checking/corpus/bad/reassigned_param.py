# expect: TL026 3:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    x = load_tile_like(x, z)
    z.store(x)
