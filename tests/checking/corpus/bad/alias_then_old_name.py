# expect: TL029 7:5
# expect: TL014 7:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    w = z
    w.store(t)
    z.store(t)
