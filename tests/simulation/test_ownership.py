"""What the simulator sees that a GPU cannot: who wrote what, races, out-of-range accesses."""
import numpy as np

from cutile_lab.simulation import SimResult, ownership_figure, simulate
from tests.simulation.kernels import kernel, marked_line


def test_ownership_map_1d_ragged(rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    r = simulate(kernel("add"), [z, x, x], (8,), {"B": 128})
    own = r.ownership["z"]
    assert own.dtype == np.int32 and own.shape == (n,)
    np.testing.assert_array_equal(own, np.arange(n) // 128)
    assert r.writes_by_tile == {t: {"z": 128 if t < 7 else n - 7 * 128} for t in range(8)}
    assert r.reads_by_tile[7] == {"x": 2 * (n - 7 * 128)}   # x passed twice: one memory
    assert r.conflicts == {}


def test_ownership_map_2d_ragged(rng):
    m, n = 100, 70
    x = rng.standard_normal((m, n)).astype(np.float32)
    z = np.zeros((m, n), np.float32)
    r = simulate(kernel("add2d"), [z, x, x], (4, 3), {"BM": 32, "BN": 32})
    rows, cols = np.indices((m, n))
    np.testing.assert_array_equal(r.ownership["z"], (rows // 32) * 3 + cols // 32)
    assert r.tile_coords(5) == (1, 2) and r.tile_id(1, 2) == 5
    assert r.writes_by_tile[11] == {"z": (100 - 96) * (70 - 64)}


def test_unwritten_output_elements_are_minus_one(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    z = np.zeros(1000, np.float32)
    r = simulate(kernel("add"), [z, x, x], (5,), {"B": 128})   # grid too small
    own = r.ownership["z"]
    assert (own[:640] >= 0).all() and (own[640:] == -1).all()
    assert [d.code for d in r.diagnostics] == ["SIM030"]          # note: not the inferred grid
    assert r.ok


def test_planted_race_reported_with_lines_and_tiles(rng):
    x = rng.standard_normal(1024).astype(np.float32)
    z = np.zeros(1024, np.float32)
    r = simulate(kernel("racy"), [z, x], (8,), {"B": 128})
    races = [d for d in r.diagnostics if d.code == "SIM010"]
    assert races and all(d.severity == "error" for d in races) and not r.ok
    own_line = marked_line("racy", "own store")
    neighbour_line = marked_line("racy", "neighbour store")
    by_line = {d.span.line: d for d in races}
    # tile 1's own store hits what tile 0 wrote through the unsafe store
    d = by_line[own_line]
    assert "tile 0" in d.message and "tile 1" in d.message
    assert [lab.span.line for lab in d.labels] == [neighbour_line]
    assert "tile 0" in d.labels[0].message
    # tile 7's unsafe store wraps around onto tile 0's own tile
    d = by_line[neighbour_line]
    assert "tile 0" in d.message and "tile 7" in d.message
    assert [lab.span.line for lab in d.labels] == [own_line]
    assert any("unsafe" in note for note in d.notes)
    assert d.span.filename == "<sim-test racy>"
    assert r.conflicts["z"].all()


def test_planted_out_of_bounds_store(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    z = np.zeros(1000, np.float32)
    r = simulate(kernel("shifted"), [z, x], (8,), {"B": 128})
    [d] = r.diagnostics
    assert d.code == "SIM002" and d.severity == "error"
    assert d.span.line == marked_line("shifted", "store")
    assert "tile 7" in d.message and "tile 6" not in d.message
    assert any("(8,)" in n for n in d.notes)       # the tile index that fell off the end
    own = r.ownership["z"]
    assert (own[:128] == -1).all()                  # nobody wrote tile 0's elements
    np.testing.assert_array_equal(own[128:], np.arange(128, 1000) // 128 - 1)
    np.testing.assert_array_equal(z[128:], x[:872])  # partial last store was masked


def test_scatter_out_of_bounds_without_bounds_check(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    z = np.zeros(1000, np.float32)
    dst = np.zeros(1000, np.float32)
    r = simulate(kernel("scatter_oob"), [z, x, dst], (8,), {"B": 128})
    [d] = r.diagnostics
    assert d.code == "SIM003" and d.span.line == marked_line("scatter_oob", "scatter")
    assert "tile 7" in d.message
    assert any("27 index(es)" in n for n in d.notes)
    np.testing.assert_array_equal(dst[3:], x[:997])
    assert set(r.ownership) == {"z", "dst"}


def test_atomics_from_many_tiles_are_not_a_race(rng):
    n = 1024
    x = rng.integers(0, 16, n).astype(np.int32)
    counts = np.zeros(16, np.int32)
    out = np.zeros(n, np.int32)
    r = simulate(kernel("histogram"), [out, x, counts], (8,), {"B": 128})
    assert r.ok and r.diagnostics == []
    np.testing.assert_array_equal(counts, np.bincount(x, minlength=16))
    assert (r.ownership["counts"] == -2).all()     # updated atomically by several tiles


def test_ragged_padding_is_visible_in_atomics(rng):
    """On a ragged input the last tile's zero padding is counted too, as on the GPU."""
    n = 1000
    x = rng.integers(1, 16, n).astype(np.int32)     # no real zeros
    counts = np.zeros(16, np.int32)
    simulate(kernel("histogram"), [np.zeros(n, np.int32), x, counts], (8,), {"B": 128})
    assert counts[0] == 8 * 128 - n


def test_read_write_race_between_tiles(rng):
    src = '''
def smear(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        store(x, (tile_id(0) + 1,), t)
    z.store(t)
'''
    from cutile_lab.kernel import kernels_from_source
    k = kernels_from_source(src, "<smear>")["smear"]
    x = rng.standard_normal(512).astype(np.float32)
    r = simulate(k, [np.zeros(512, np.float32), x], (4,), {"B": 128})
    codes = r.codes()
    assert "SIM011" in codes and "SIM002" in codes
    d = next(d for d in r.diagnostics if d.code == "SIM011")
    assert d.span.line == 3                       # tile 1's load of what tile 0 stored
    assert "tile 1" in d.message and "tile 0" in d.message
    assert [lab.span.line for lab in d.labels] == [5]


def test_wholly_out_of_range_load(rng):
    src = '''
def late(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile(x, (tile_id(0) + 2,), (B,)))
'''
    from cutile_lab.kernel import kernels_from_source
    k = kernels_from_source(src, "<late>")["late"]
    x = rng.standard_normal(256).astype(np.float32)
    z = np.full(256, 5.0, np.float32)
    r = simulate(k, [z, x], (2,), {"B": 128})
    [d] = r.diagnostics
    assert d.code == "SIM001" and d.span.line == 3
    assert "tile 0" in d.message and "tile 1" in d.message
    assert (z == 0).all()                          # padded with zeros


def test_ownership_figure_and_image(rng, tmp_path):
    x = rng.standard_normal((100, 70)).astype(np.float32)
    z = np.zeros_like(x)
    r = simulate(kernel("add2d"), [z, x, x], (4, 3), {"BM": 32, "BN": 32})
    img = r.ownership_image("z")
    assert img.shape == (100, 70, 3) and img.dtype == np.uint8
    # neighbouring tiles get different colours
    assert (img[0, 0] != img[0, 40]).any() and (img[0, 0] != img[40, 0]).any()
    fig = ownership_figure(r, "z")
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert texts == {str(i) for i in range(12)}
    fig.savefig(tmp_path / "own.png")
    assert (tmp_path / "own.png").stat().st_size > 1000


def test_figure_marks_races_and_unwritten(rng):
    x = rng.standard_normal(1024).astype(np.float32)
    r = simulate(kernel("racy"), [np.zeros(1024, np.float32), x], (8,), {"B": 128})
    img = r.ownership_image("z")
    assert img.shape == (1, 1024, 3)
    assert (img[0] == (220, 0, 0)).all()
    fig = r.ownership_figure("z")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("race" in t for t in labels)
    r2 = simulate(kernel("shifted"), [np.zeros(1000, np.float32), x[:1000]], (8,), {"B": 128})
    img2 = r2.ownership_image("z")
    assert (img2[0, :128] == (200, 200, 200)).all()
    labels = [t.get_text() for t in r2.ownership_figure().legends[0].get_texts()]
    assert labels == ["not written", "masked: tile past the edge"]
    assert r2.masked["z"] == [(6, ((896, 1024),))]  # tile 6 stored tile index 7: 1000..1023 cut


def test_large_maps_draw_quickly(rng):
    n = 1 << 20
    x = rng.standard_normal(n).astype(np.float32)
    r = simulate(kernel("add"), [np.zeros(n, np.float32), x, x], (n // 1024,), {"B": 1024})
    fig = r.ownership_figure("z")
    assert len(fig.axes[0].texts) == 0            # 1024 tiles: no labels


def test_summary_text(rng):
    x = rng.standard_normal(1024).astype(np.float32)
    r = simulate(kernel("racy"), [np.zeros(1024, np.float32), x], (8,), {"B": 128})
    text = str(r)
    assert "SIM010" in text and "1024 in races" in text
    assert isinstance(r, SimResult) and r.elapsed > 0
