def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], n: i32):
    idx = tile_id(0) * B + arange(B, dtype=i32)
    z.store(where(idx < n, load_tile_like(x, z), 0.0))
