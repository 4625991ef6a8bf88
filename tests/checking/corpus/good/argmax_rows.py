def row_argmax(idx: Mut[Tensor[i32, "BM, 1"]], x: Tensor[f32, "?, N"]):
    t = load_tile(x, (tile_id(0), 0), (BM, N))
    idx.store(argmax(t, axis=1, keepdims=True))
