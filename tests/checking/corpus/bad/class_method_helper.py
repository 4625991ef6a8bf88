# expect: TL038 10:5
class Put:
    @staticmethod
    def into(dst, t):
        dst.store(t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    Put.into(x, t)
    z.store(t)
