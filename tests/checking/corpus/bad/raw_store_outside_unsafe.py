# expect: TL011 4:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    store(z, index=(tile_id(0) + 1,), tile=t)
