# expect: TL031 3:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    global COUNT
    z.store(load_tile_like(x, z))
