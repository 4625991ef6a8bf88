# expect: TL010 11:5
def write(dst, t):
    dst.store(t)


emit = write


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    emit(x, t)
    z.store(t)
