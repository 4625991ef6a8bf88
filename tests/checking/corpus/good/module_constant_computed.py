import math

INV_LOG_2 = 1 / math.log(2)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(exp2(load_tile_like(x, z) * INV_LOG_2))
