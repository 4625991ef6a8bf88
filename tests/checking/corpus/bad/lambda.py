# expect: TL031 3:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    f = lambda t: t * 2.0
    z.store(f(load_tile_like(x, z)))
