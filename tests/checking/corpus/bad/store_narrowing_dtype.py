# expect: TL017 4:13
def k(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
    t = load_tile_like(x, z)
    z.store(alpha * t)
