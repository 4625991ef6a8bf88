# expect: TL017 3:13
def k(z: Mut[Tensor[i32, "B"]], x: Tensor[f32, "?"]):
    z.store(floor(load_tile_like(x, z)))
