# expect: TL015 5:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    t = load_tile_like(x, z)
    if alpha > 0:
        z.store(t)
