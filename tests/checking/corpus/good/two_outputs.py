def split_sign(pos: Mut[Tensor[f32, "B"]], neg: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, pos)
    pos.store(maximum(t, 0.0))
    neg.store(minimum(t, 0.0))
