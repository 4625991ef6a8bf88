# expect: TL031 3:8
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    a, *rest = (1, 2, 3)
    z.store(load_tile_like(x, z) * a)
