# expect: TL043 3:31
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(x, (tile_id(1),), (B,))
    z.store(t)
