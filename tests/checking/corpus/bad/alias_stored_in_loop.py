# expect: TL014 6:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    w = z
    for i in range(4):
        w.store(t)
