# expect: TL024 3:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(z, (tile_id(0) + 1,), (B,))
    z.store(t + load_tile_like(x, z))
