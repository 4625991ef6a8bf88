"""A plain cuTile kernel for the raw ``cuda.tile.launch`` comparison (the same body the tile
language's ``add`` lowers to)."""
import cuda.tile as ct


import functools


def _add(z, x, y, B: ct.Constant[int]):
    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ty = ct.load(y, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(z, index=(ct.bid(0),), tile=tx + ty)


ct_add = ct.kernel(_add)


@functools.lru_cache(maxsize=None)
def _add_with(hints: tuple):
    return ct.kernel(_add, **dict(hints))


def ct_add_with(**hints):
    """The same kernel with compiler hints (``num_worker_warps=8``, ``occupancy=2``, ...)."""
    return _add_with(tuple(sorted(hints.items())))
