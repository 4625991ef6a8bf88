# expect: TL031 5:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    i = 0
    while i < 4:
        t = t * 2.0
        i = i + 1
    z.store(t)
