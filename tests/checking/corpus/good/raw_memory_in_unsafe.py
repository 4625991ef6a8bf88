# expect: TL050 5:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    offsets = tile_id(0) * B + arange(B, dtype=i32)
    with unsafe():
        z.get_raw_memory().store_offset(offsets, t)
