# expect: TL017 3:13
def k(z: Mut[Tensor[bf16, "B"]], x: Tensor[f16, "?"]):
    z.store(load_tile_like(x, z))
