# expect: TL001 2:36
def k(z: Mut[Tensor[f32, "B"]], x: list):
    z.store(load_tile_like(x, z))
