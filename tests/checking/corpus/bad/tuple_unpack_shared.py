# expect: TL010 5:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    src, dst = z, x
    dst.store(t)
    src.store(t)
