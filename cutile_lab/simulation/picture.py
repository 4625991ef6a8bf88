"""Pictures of a simulated launch: which tile wrote which element.

Owns ``ownership_image`` (an RGB array, one pixel per element) and ``ownership_figure`` (a
matplotlib ``Figure``, built with the object API, never pyplot's global state): each tile's region
in its own colour with its id written in it when the grid is small, 1-D outputs as a strip,
elements written by two tiles (races) in red, unwritten elements grey; and ``mismatch_figure``,
the elements whose values are wrong, in red over the same tile grid.
"""
from __future__ import annotations

import numpy as np

from cutile_lab.simulation.memory import SHARED_ATOMIC, UNWRITTEN

# Sixteen distinct colours (matplotlib's tab20 without its reds and greys, which mean "race"
# and "unwritten"): strong hues first, then their light variants.
_PALETTE = np.array([
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (148, 103, 189), (140, 86, 75),
    (227, 119, 194), (188, 189, 34), (23, 190, 207),
    (174, 199, 232), (255, 187, 120), (152, 223, 138), (197, 176, 213), (196, 156, 148),
    (247, 182, 210), (219, 219, 141), (158, 218, 229),
], dtype=np.uint8)
_GREY = np.array((200, 200, 200), dtype=np.uint8)
_RED = np.array((220, 0, 0), dtype=np.uint8)
_SHARED = np.array((255, 228, 140), dtype=np.uint8)   # light amber: shared atomics
_MAX_LABELS = 64
_MAX_PIXELS = 1024
_MAX_OUTLINES = 256


def _preferred_colour(tile_ids: np.ndarray, grid: tuple[int, ...]) -> np.ndarray:
    """A first-choice palette index per tile: neighbours in the grid get different ones."""
    coords = np.unravel_index(np.maximum(tile_ids, 0), grid)
    mults = (1, 3, 5)[:len(grid)][::-1]          # (c0, c1) -> 3 * c0 + c1
    key = sum(c * m for c, m in zip(coords, mults))
    return key % len(_PALETTE)


def _colour_lut(own: np.ndarray, grid: tuple[int, ...]) -> np.ndarray:
    """Palette index for each tile id (indexable by id), chosen greedily so that regions that
    touch in the picture never share a colour (whatever the kernel's tile order)."""
    ids = np.unique(own[own >= 0])
    lut = np.zeros(int(ids.max()) + 1 if ids.size else 1, dtype=np.intp)
    if not ids.size:
        return lut
    neighbours: dict[int, set] = {}
    for a, b in ((own[:, 1:], own[:, :-1]), (own[1:, :], own[:-1, :])):
        m = (a != b) & (a >= 0) & (b >= 0)
        if m.any():
            pairs = np.unique(np.stack([a[m], b[m]]), axis=1)
            for x, y in zip(pairs[0].tolist(), pairs[1].tolist()):
                neighbours.setdefault(x, set()).add(y)
                neighbours.setdefault(y, set()).add(x)
    preferred = _preferred_colour(ids, grid)
    n = len(_PALETTE)
    for t, pref in zip(ids.tolist(), preferred.tolist()):
        used = {int(lut[u]) for u in neighbours.get(t, ()) if u < t}
        c = pref
        if c in used:
            c = next((k % n for k in range(pref, pref + n) if k % n not in used), pref)
        lut[t] = c
    return lut


def _as_2d(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    if a.ndim == 2:
        return a
    return a.reshape(-1, a.shape[-1])


def ownership_image(result, name: str) -> np.ndarray:
    """RGB uint8 image (H x W x 3), one pixel per element of argument ``name``."""
    if name not in result.ownership:
        raise KeyError(f"no ownership map for `{name}` (maps: "
                       f"{', '.join(result.ownership) or 'none; simulate with record=True'})")
    own = _as_2d(result.ownership[name])
    img = np.empty(own.shape + (3,), dtype=np.uint8)
    written = own >= 0
    img[~written] = _GREY
    img[own == SHARED_ATOMIC] = _SHARED
    if written.any():
        img[written] = _PALETTE[_colour_lut(own, result.grid)[own[written]]]
    conflict = result.conflicts.get(name)
    if conflict is not None:
        img[_as_2d(conflict)] = _RED
    return img


def _text_colour(rgb) -> str:
    r, g, b = (float(c) / 255 for c in rgb)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def _rectangles(m: np.ndarray, limit: int = 4096):
    """Cover a 2-D map with rectangles of equal value: runs along rows, merged down the rows
    while they repeat. Returns (value, y0, y1, x0, x1) with exclusive ends, or None when there
    would be more than ``limit``."""
    h, w = m.shape
    rects, open_ = [], {}
    for y in range(h):
        row = m[y]
        cuts = np.flatnonzero(row[1:] != row[:-1]) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [w]))
        cur = {(row[s].item(), int(s), int(e)) for s, e in zip(starts, ends)}
        for key in [k for k in open_ if k not in cur]:
            rects.append((key[0], open_.pop(key), y, key[1], key[2]))
        for key in cur:
            open_.setdefault(key, y)
        if len(rects) + len(open_) > limit:
            return None
    rects.extend((k[0], y0, h, k[1], k[2]) for k, y0 in open_.items())
    return rects


def ownership_figure(result, name: str | None = None, *, title: str | None = None,
                     labels: bool | None = None, width: float = 8.0):
    """A ``matplotlib.figure.Figure`` of who wrote ``name`` (default: the first output):
    each tile's region in its colour with its id in it (for up to 64 tiles), outlines where the
    writer changes, races red and hatched, unwritten elements grey."""
    if name is None:
        if not result.ownership:
            raise ValueError("nothing was recorded (simulate with record=True)")
        name = next(iter(result.ownership))
    own_full = result.ownership[name]
    own = _as_2d(own_full)
    img = ownership_image(result, name)
    conflict_full = result.conflicts.get(name)
    h, w = own.shape
    strip = own_full.ndim <= 1

    # downsample very large maps for drawing
    sy = max(1, -(-h // _MAX_PIXELS))
    sx = max(1, -(-w // _MAX_PIXELS))
    own_s = own[::sy, ::sx]
    shown = img[::sy, ::sx].copy()
    conf_s = _as_2d(conflict_full)[::sy, ::sx] if conflict_full is not None else None
    if conf_s is not None:      # races: the writer's colour under a red tint (hatched below)
        lut = _colour_lut(own, result.grid)
        base = np.where(own_s[..., None] >= 0, _PALETTE[lut[np.maximum(own_s, 0)]], _GREY)
        shown[conf_s] = (0.45 * base[conf_s] + 0.55 * _RED).astype(np.uint8)

    masked = result.masked.get(name, []) if own_full.ndim in (1, 2) else []
    fig = _figure(strip, h, w, masked, width)
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(shown, interpolation="nearest", aspect="auto" if strip else "equal",
              extent=(-0.5, w - 0.5, h - 0.5, -0.5))

    def box(y0, y1, x0, x1):   # downsampled index ranges -> element coordinates
        return (x0 * sx - 0.5, y0 * sy - 0.5, min(x1 * sx, w) - x0 * sx,
                min(y1 * sy, h) - y0 * sy)

    if labels is None:
        ids = np.unique(own[own >= 0])
        labels = 0 < ids.size <= _MAX_LABELS
    _draw_tiles(ax, own_s, shown, box, labels, strip and w)
    if conf_s is not None:
        _draw_races(ax, conf_s, box)
    if masked:
        _draw_masked(ax, masked, _colour_lut(own, result.grid), strip, h, w)

    if strip:
        ax.set_yticks([])
        ax.set_xlabel("element")
    else:
        ax.set_xlabel("column" if own_full.ndim == 2 else "last axis")
        ax.set_ylabel("row" if own_full.ndim == 2 else "leading axes, flattened")
    n_conf = int(conflict_full.sum()) if conflict_full is not None else 0
    ax.set_title(title or _title(result, name, own_full, own, n_conf), fontsize=10)
    _legend(fig, own, n_conf, masked)
    return fig


def _figure(strip: bool, h: int, w: int, masked: list, width: float):
    """An empty figure sized for the map (and the masked tiles past its edge)."""
    from matplotlib.figure import Figure
    if strip:
        return Figure(figsize=(width + 2.0, 2.1), layout="constrained")
    hh = max([h] + [b[0][1] for _t, b in masked])
    ww = max([w] + [b[1][1] for _t, b in masked])
    aspect = hh / max(ww, 1)
    img_w, img_h = (width, width * aspect) if aspect <= 1 else (7.0 / aspect, 7.0)
    img_w = max(img_w, 3.0)
    return Figure(figsize=(img_w + 2.4, img_h + 1.3), layout="constrained")


def _draw_tiles(ax, own_s: np.ndarray, shown: np.ndarray, box, labels: bool, strip_w) -> None:
    """White outlines where the writer changes, and each tile's id in its largest region
    (``strip_w``: the map's width for a 1-D strip, where narrow regions get smaller ids)."""
    from matplotlib.patches import Rectangle
    rects = _rectangles(own_s)
    if rects is None:
        return
    if len(rects) <= _MAX_OUTLINES:
        for v, y0, y1, x0, x1 in rects:
            x, y, bw, bh = box(y0, y1, x0, x1)
            ax.add_patch(Rectangle((x, y), bw, bh, fill=False, edgecolor="white",
                                   linewidth=0.8))
    if not labels:
        return
    biggest: dict = {}
    for v, y0, y1, x0, x1 in rects:
        if v >= 0:
            biggest[v] = max(biggest.get(v, 0), (y1 - y0) * (x1 - x0))
    for v, y0, y1, x0, x1 in rects:
        if v < 0 or (y1 - y0) * (x1 - x0) < 0.25 * biggest[v]:
            continue
        x, y, bw, bh = box(y0, y1, x0, x1)
        cx, cy = x + bw / 2, y + bh / 2
        colour = _text_colour(shown[(y0 + y1) // 2, (x0 + x1) // 2])
        small = bool(strip_w) and bw / strip_w < 0.03
        ax.text(cx, cy, str(int(v)), ha="center", va="center", fontsize=7 if small else 9,
                color=colour, fontweight="bold")


def _draw_races(ax, conf_s: np.ndarray, box) -> None:
    """Red hatching over the elements two or more tiles wrote."""
    from matplotlib.patches import Rectangle
    crects = _rectangles(conf_s.astype(np.int8))
    if crects is None:
        return
    for v, y0, y1, x0, x1 in crects:
        if v:
            x, y, bw, bh = box(y0, y1, x0, x1)
            ax.add_patch(Rectangle((x, y), bw, bh, fill=False, hatch="///",
                                   edgecolor=_RED / 255, linewidth=1.2))


def _draw_masked(ax, masked: list, lut: np.ndarray, strip: bool, h: int, w: int) -> None:
    """Stores that crossed the edge: the part of each tile outside the array, masked off,
    dashed in the tile's colour; the axes grow to show it and the array's edge is drawn."""
    from matplotlib.patches import Rectangle
    x_max, y_max = w, h
    for t, nominal in masked[:_MAX_OUTLINES]:
        (y0, y1), (x0, x1) = ((0, 1),) + nominal if strip else nominal
        colour = _PALETTE[lut[t]] / 255 if t < len(lut) else _GREY / 255
        parts = [(max(x0, w), x1, y0, min(y1, h)), (x0, min(x1, w), max(y0, h), y1),
                 (max(x0, w), x1, max(y0, h), y1)]
        for px0, px1, py0, py1 in parts:
            if px1 > px0 and py1 > py0:
                ax.add_patch(Rectangle((px0 - 0.5, py0 - 0.5), px1 - px0, py1 - py0,
                                       facecolor=(*colour, 0.25), hatch="..",
                                       edgecolor=(*colour, 0.9), linestyle="--",
                                       linewidth=0.8))
        x_max, y_max = max(x_max, x1), max(y_max, y1)
    ax.set_xlim(-0.5, x_max - 0.5)
    ax.set_ylim(y_max - 0.5, -0.5)
    ax.axvline(w - 0.5, color="black", linewidth=1.2)
    if not strip:
        ax.axhline(h - 0.5, color="black", linewidth=1.2)


def _title(result, name: str, own_full: np.ndarray, own: np.ndarray, n_conf: int) -> str:
    """What the picture shows: the kernel, the array, the grid and its tile numbering, how many
    tiles wrote and how many elements were written (and in races)."""
    n_written = int((own >= 0).sum() + (own == SHARED_ATOMIC).sum())
    shape = list(own_full.shape)
    grid = tuple(result.grid)
    numbering = ""
    if len(grid) == 2:
        numbering = f" (tile id = {grid[1]}·bid0 + bid1)"
    elif len(grid) == 3:
        numbering = f" (tile id = ({grid[1]}·bid0 + bid1)·{grid[2]} + bid2)"
    writers = sum(1 for per_tile in result.writes_by_tile.values() if name in per_tile)
    return (f"{result.kernel}: which tile wrote `{name}` {shape}\n"
            f"grid {grid}{numbering}, {writers} tile(s) wrote, "
            f"{n_written}/{own.size} elements written"
            + (f", {n_conf} in races" if n_conf else ""))


def _legend(fig, own: np.ndarray, n_conf: int, masked: list) -> None:
    """A legend for the special colours the picture uses."""
    from matplotlib.patches import Patch
    handles = []
    if (own == UNWRITTEN).any():
        handles.append(Patch(facecolor=_GREY / 255, edgecolor="black", label="not written"))
    if n_conf:
        handles.append(Patch(facecolor=_RED / 255, edgecolor="black", hatch="///",
                             label="race: 2+ tiles wrote"))
    if masked:
        handles.append(Patch(facecolor=(0.8, 0.8, 0.8, 0.3), edgecolor="grey", hatch="..",
                             linestyle="--", label="masked: tile past the edge"))
    if (own == SHARED_ATOMIC).any():
        handles.append(Patch(facecolor=_SHARED / 255, edgecolor="black",
                             label="atomic updates by 2+ tiles"))
    if handles:
        fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)


def mismatch_figure(result, name: str, wrong: np.ndarray, *, title: str | None = None,
                    width: float = 6.0):
    """A ``matplotlib.figure.Figure`` of the elements of ``name`` whose values are wrong
    (``wrong``: a bool array of the output's shape), in red over the tile grid: each tile's
    region faded in its colour, outlined, with its id in it (for up to 64 tiles)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    own = _as_2d(result.ownership[name])
    bad = _as_2d(np.asarray(wrong, dtype=bool))
    h, w = own.shape
    img = ownership_image(result, name).astype(np.float32)
    img = (0.3 * img + 0.7 * 255).astype(np.uint8)          # the tiles, faded
    img[bad] = _RED
    sy = max(1, -(-h // _MAX_PIXELS))
    sx = max(1, -(-w // _MAX_PIXELS))
    shown, own_s = img[::sy, ::sx], own[::sy, ::sx]
    strip = result.ownership[name].ndim <= 1
    if strip:
        fig = Figure(figsize=(width + 2.0, 2.1), layout="constrained")
    else:
        aspect = h / max(w, 1)
        img_w, img_h = (width, width * aspect) if aspect <= 1 else (6.0 / aspect, 6.0)
        fig = Figure(figsize=(max(img_w, 3.0) + 2.0, img_h + 1.2), layout="constrained")
    ax = fig.add_subplot(1, 1, 1)
    ax.imshow(shown, interpolation="nearest", aspect="auto" if strip else "equal",
              extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    rects = _rectangles(own_s)
    ids = np.unique(own[own >= 0])
    if rects is not None and len(rects) <= _MAX_OUTLINES:
        for v, y0, y1, x0, x1 in rects:
            x, y = x0 * sx - 0.5, y0 * sy - 0.5
            bw, bh = min(x1 * sx, w) - x0 * sx, min(y1 * sy, h) - y0 * sy
            ax.add_patch(Rectangle((x, y), bw, bh, fill=False, edgecolor="black",
                                   linewidth=0.6))
            if 0 < ids.size <= _MAX_LABELS and v >= 0:
                ax.text(x + bw / 2, y + bh / 2, str(int(v)), ha="center", va="center",
                        fontsize=8, color="black", alpha=0.7)
    if strip:
        ax.set_yticks([])
        ax.set_xlabel("element")
    else:
        ax.set_xlabel("column")
        ax.set_ylabel("row" if result.ownership[name].ndim == 2 else "leading axes, flattened")
    n_bad = int(bad.sum())
    ax.set_title(title or f"{result.kernel}: wrong elements of `{name}` "
                          f"{list(result.ownership[name].shape)}: {n_bad} of {own.size}, over "
                          f"the tile grid {tuple(result.grid)}", fontsize=10)
    fig.legend(handles=[Patch(facecolor=_RED / 255, label="wrong value"),
                        Patch(facecolor="white", edgecolor="black", label="a tile (its id)")],
               loc="outside right upper", fontsize=8, frameon=False)
    return fig
