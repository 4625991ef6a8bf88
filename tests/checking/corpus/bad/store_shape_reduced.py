# expect: TL016 5:15
def k(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), 0), (BM, 128))
    s = sum(t, axis=1)
    out.store(s)
