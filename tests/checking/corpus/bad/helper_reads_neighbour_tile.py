# expect: TL024 7:13
def right(a):
    return load_tile(a, (tile_id(0) + 1,), a.shape)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(right(z))
