# expect: TL042 2:1
def k(x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    t = load_tile(x, (tile_id(0),), (128,))
