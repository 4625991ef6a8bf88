# expect: TL019 10:5
# expect: TL050 10:5
def bump(x, t):
    with unsafe():
        atomic_add(x, (tile_id(0),), t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    bump(x, t)
    z.store(t)
