# expect: TL025 4:13
def k(z: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), 0), (BM, 64))
    z.store(t.sum(axis=1, keepdims=True))
