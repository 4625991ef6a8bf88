# expect: TL016 7:13
def grab(x, n):
    return load_tile(x, (tile_id(0),), (n,))


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(grab(x, 2 * B))
