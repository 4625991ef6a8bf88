# expect: TL025 7:5
def put(d, t):
    d.store(tile=t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    put(z, load_tile(x, (tile_id(0),), (B * 2,)))
