def scaled_f16(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
    t = load_tile_like(x, z).astype(f32)
    z.store((t * alpha).astype(f16))
