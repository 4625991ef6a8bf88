# expect: TL011 6:23
from cuda import tile as cuda_t


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(x, (cuda_t.bid(0),), (B,))
    z.store(t)
