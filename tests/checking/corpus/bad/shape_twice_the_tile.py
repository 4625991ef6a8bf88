# expect: TL016 4:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(x, (tile_id(0),), (B * 2,))
    z.store(t)
