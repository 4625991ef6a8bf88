# expect: TL019 6:9
# expect: TL050 5:5
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        atomic_add(x, (tile_id(0) * B + arange(B, dtype=i32),), t)
    z.store(t)
