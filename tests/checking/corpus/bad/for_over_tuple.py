# expect: TL031 4:14
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    for s in (1.0, 2.0):
        t = t * s
    z.store(t)
