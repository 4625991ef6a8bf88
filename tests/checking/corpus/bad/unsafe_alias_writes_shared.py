# expect: TL019 8:9
# expect: TL050 6:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t)
    with unsafe():
        xa = x
        store(xa, index=(tile_id(0),), tile=t)
