# expect: TL014 5:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    for i in range(3):
        z.store(t)
