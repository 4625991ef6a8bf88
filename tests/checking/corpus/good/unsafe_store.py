# expect: TL050 4:5
def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        store(z, index=(tile_id(0),), tile=t * 2.0)
