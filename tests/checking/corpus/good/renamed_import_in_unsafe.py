# expect: TL050 7:5
import cuda.tile as ctile


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        ctile.store(z, index=(tile_id(0),), tile=t)
