# expect: TL031 7:5
def put(d, t):
    [a.store(t) for a in (d,)]


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    put(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
