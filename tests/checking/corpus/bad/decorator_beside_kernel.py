# expect: TL031 4:2
import functools
@kernel
@functools.lru_cache
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
