# expect: TL017 3:13
def k(z: Mut[Tensor[u8, "B"]], x: Tensor[i8, "?"]):
    z.store(load_tile_like(x, z))
