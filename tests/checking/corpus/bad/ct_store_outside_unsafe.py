# expect: TL011 4:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    ct.store(z, index=(0,), tile=t)
