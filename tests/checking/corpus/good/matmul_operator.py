def small_matmul(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
                 BK: Const[int] = 32):
    ta = load_tile(a, (tile_id(0), 0), (BM, BK))
    tb = load_tile(b, (0, tile_id(1)), (BK, BN))
    c.store(ta @ tb)
