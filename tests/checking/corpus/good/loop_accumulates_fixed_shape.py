def k(z: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"], BK: Const[int] = 64):
    acc = full((BM, 1), 0.0, dtype=f32)
    for j in range(num_tiles(x, 1, (BM, BK))):
        t = load_tile(x, (tile_id(0), j), (BM, BK))
        acc = acc + sum(t * t, axis=1, keepdims=True)
    z.store(sqrt(acc))
