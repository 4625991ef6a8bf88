def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    pair = load_tile(x, (tile_id(0),), (2 * B,))
    z.store(sum(reshape(pair, (2, B)), axis=0))
