# expect: TL029 4:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    w = z
    t = z.load()
    w.store(t + load_tile_like(x, w))
