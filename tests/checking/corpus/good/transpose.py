def transpose_tiles(out: Mut[Tensor[f32, "BN, BM"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(1), tile_id(0)), (BM, BN))
    out.store(transpose(t))
