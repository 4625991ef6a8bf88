# expect: TL018 3:13
def k(z: Mut[Tensor[f16, "B"]], x: Tensor[i8, "?"]):
    z.store(load_tile_like(x, z))
