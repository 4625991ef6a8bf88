# expect: TL011 4:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    atomic_add(z, (0,), t)
