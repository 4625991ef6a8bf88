# expect: TL011 3:23
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(x, (bid(0),), (B,))
    z.store(t)
