def gemm_f16(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
             BK: Const[int] = 64):
    acc = zeros((BM, BN), dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        acc = mma(load_tile(a, (tile_id(0), k), (BM, BK)),
                  load_tile(b, (k, tile_id(1)), (BK, BN)), acc)
    c.store(acc.astype(f16))
