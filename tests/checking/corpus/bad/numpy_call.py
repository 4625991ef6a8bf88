# expect: TL030 6:9
import numpy as np

def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    e = np.exp(t)
    z.store(e)
