# expect: TL035 6:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    for i in range(3):
        t = reshape(t, (-1, 1))
    z.store(t)
