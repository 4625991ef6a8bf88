# expect: TL031 3:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    def twice(t):
        return t * 2.0
    z.store(twice(load_tile_like(x, z)))
