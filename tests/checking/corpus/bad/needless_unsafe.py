# expect: TL012 5:10
# expect: TL050 5:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        z.store(t * 2.0)
