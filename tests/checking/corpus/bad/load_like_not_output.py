# expect: TL020 3:27
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    t = load_tile_like(x, y)
    z.store(t)
