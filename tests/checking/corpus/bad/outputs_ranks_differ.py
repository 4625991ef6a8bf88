# expect: TL041 2:33
def k(z: Mut[Tensor[f32, "B"]], w: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
    w.store(full((BM, BN), 0, dtype=f32))
