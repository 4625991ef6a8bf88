# expect: TL011 4:11
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    raw = z.get_raw_memory()
    z.store(t)
