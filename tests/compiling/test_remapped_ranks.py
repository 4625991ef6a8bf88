"""Grouped tile order and the persistent schedule remap the launch index to the output's tile
coordinates: for an output of any rank every tile gets exactly one owner, and `tile_id` /
`num_tiles` of each axis mean what they mean without the remap (run on the simulator, which
executes the lowered kernel). A rank-3 persistent output was once lowered with a tile count as
its last coordinate: every store went outside the output."""
import numpy as np
import pytest

import cutile_lab as cl

SRC = '''
@kernel(schedule="persistent")
def inc3(out: Mut[Tensor[f32, "1, 4, 8"]], x: Tensor[f32, "?, ?, ?"]):
    out.store(load_tile_like(x, out) + 1.0)

@kernel(tile_order="grouped", group_size=2)
def where3(out: Mut[Tensor[f32, "1, 2, 4"]]):
    out.store(full((1, 2, 4), 0.0, dtype=f32) + tile_id(0) * 100 + tile_id(1) * 10
              + tile_id(2) + num_tiles(2) * 1000)

@kernel(schedule="persistent")
def where3p(out: Mut[Tensor[f32, "2, 1, 2"]]):
    out.store(full((2, 1, 2), 0.0, dtype=f32) + tile_id(0) * 100 + tile_id(1) * 10
              + tile_id(2) + num_tiles(1) * 1000)
'''


@pytest.fixture(scope="module")
def kernels():
    return cl.kernels_from_source(SRC, "test_remapped_ranks.py")


def test_a_persistent_rank3_output_is_written_where_it_is_owned(kernels):
    x = np.random.default_rng().standard_normal((3, 8, 16)).astype(np.float32)
    z = cl.full((3, 8, 16), np.nan).sync()
    kernels["inc3"](z.partition_mut((1, 4, 8)), cl.from_numpy(x).sync()).sync()
    np.testing.assert_array_equal(z.to_numpy(), x + 1)


@pytest.mark.parametrize("name, shape, tile", [("where3", (2, 4, 12), (1, 2, 4)),
                                               ("where3p", (6, 5, 8), (2, 1, 2))])
def test_every_axis_keeps_its_tile_coordinate(kernels, name, shape, tile):
    z = cl.full(shape, np.nan).sync()
    kernels[name](z.partition_mut(tile)).sync()
    got = z.to_numpy()[tuple(slice(None, None, t) for t in tile)]
    counts = [s // t for s, t in zip(shape, tile)]
    coords = np.indices(counts)
    big = counts[2] if name == "where3" else counts[1]
    want = coords[0] * 100 + coords[1] * 10 + coords[2] + big * 1000
    np.testing.assert_array_equal(got, want)
