# expect: TL050 5:5
def count_positive(counts: Mut[Tensor[i32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, counts)
    idx = tile_id(0) * B + arange(B, dtype=i32)
    with unsafe():
        atomic_add(counts, (idx,), where(t > 0, 1, 0))
