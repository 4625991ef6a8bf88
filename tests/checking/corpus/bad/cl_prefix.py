# expect: TL034 3:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = cl.load_tile_like(x, z)
    z.store(t)
