# expect: TL029 10:5
# expect: TL014 10:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    if t.shape[0] > 4:
        w = z
    else:
        w = z
    w.store(t)
    z.store(t)
