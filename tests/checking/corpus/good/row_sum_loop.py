def row_sum(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"], BK: Const[int] = 128):
    acc = zeros((BM, 1), dtype=f32)
    for k in range(num_tiles(x, 1, (BM, BK))):
        t = load_tile(x, (tile_id(0), k), (BM, BK))
        acc = acc + sum(t, axis=1, keepdims=True)
    out.store(acc)
