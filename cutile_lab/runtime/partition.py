"""Partitions: a tensor split into disjoint tiles, each owned by one block of a launch.

Owns ``Partition`` and the two ways to make one: ``t.partition(tile)`` MOVES the tensor (the old
name is dead; ``p.unpartition()`` gives the tensor back), ``t.partition_mut(tile)`` BORROWS it (the
tensor is usable again once the work using the partition completes; as a context manager the
borrow lasts until the block ends, and the block's exit waits for that work). The grid of a launch
is the partition's tile count per axis: ceil(shape / tile), at most 3 axes; boundary tiles of a
ragged partition are masked by the kernel.
"""
from __future__ import annotations

import itertools
import math
import operator
import weakref

from cutile_lab.errors import LaunchError
from cutile_lab.runtime import ownership
from cutile_lab.runtime.callsite import describe, user_site
from cutile_lab.runtime.ownership import MoveRecord

_ids = itertools.count(1)


def _tile_shape(tensor, tile_shape) -> tuple[int, ...]:
    if type(tile_shape) is int and tile_shape > 0 and len(tensor.shape) == 1:
        return (tile_shape,)          # the common case, every check below passes
    if isinstance(tile_shape, int) or hasattr(tile_shape, "__index__"):
        tile_shape = (tile_shape,)
    try:
        tile = tuple(operator.index(n) for n in tile_shape)
    except TypeError:
        raise LaunchError(f"bad tile shape {tile_shape!r}: use an int or a tuple of ints",
                          help="e.g. t.partition(128) or t.partition((64, 64))") from None
    if len(tile) != tensor.ndim:
        raise LaunchError(
            f"a tile shape of rank {len(tile)} for a tensor of rank {tensor.ndim} "
            f"(shape {tensor.shape})",
            help=f"give one tile size per dimension, e.g. "
                 f"{tuple([1] * (tensor.ndim - 1) + [128]) if tensor.ndim > 1 else 128}")
    if any(n <= 0 for n in tile):
        raise LaunchError(f"tile sizes must be positive, got {tile}")
    if len(tile) > 3:
        raise LaunchError(f"a partition has at most 3 tiled dimensions (the grid has 3 axes), "
                          f"got {len(tile)}", help="reshape the tensor to 3 dimensions or fewer")
    return tile


class Partition:
    """A tensor split into ``tile_shape`` tiles. Pass it for a kernel's ``Mut`` parameter."""

    __slots__ = ("tensor", "tile_shape", "mode", "id", "_origin", "moved", "_source",
                 "__weakref__")

    def __init__(self, tensor, tile_shape, mode: str, source=None, origin=None):
        self.tensor = tensor            # the partitioned memory (a tensor object of its own)
        self.tile_shape = tile_shape
        self.mode = mode                # "move" or "borrow"
        self.id = next(_ids)
        self._origin = origin           # where the user made it: a ``user_site`` or a Span
        self.moved = None
        self._source = source           # borrow: the tensor lent to this partition

    @property
    def origin(self):
        o = self._origin
        if isinstance(o, tuple):
            from cutile_lab.runtime.callsite import as_span
            o = self._origin = as_span(o)
        return o

    def __reduce_ex__(self, protocol):
        # a ``user_site`` holds the caller's code object, which pickle cannot carry: the place
        # travels as the ``Span`` it stands for
        self.origin
        if self.moved is not None:
            self.moved.where
        return super().__reduce_ex__(protocol)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tensor.shape

    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def backend(self) -> str:
        return self.tensor.backend

    @property
    def grid(self) -> tuple[int, ...]:
        """Tiles per axis: ceil(shape / tile)."""
        return tuple(-(-n // t) for n, t in zip(self.tensor.shape, self.tile_shape))

    @property
    def num_tiles(self) -> int:
        return math.prod(self.grid)

    @property
    def ragged(self) -> bool:
        return any(n % t for n, t in zip(self.tensor.shape, self.tile_shape))

    def _check(self, what: str) -> None:
        if self.moved is not None:
            ownership.raise_use_after_move(self, what)

    @property
    def name(self):
        return self.tensor.name

    def unpartition(self):
        """Give the tensor back (this partition is then used up)."""
        self._check("unpartition it")
        if self.mode == "borrow":
            self.release()
            return self._source
        self.moved = MoveRecord(user_site(2), "was given back as a tensor by `unpartition()`",
                                self.id, "unpartitioned here")
        t = self.tensor
        return t

    # --- the borrowing form ---------------------------------------------------------------------
    def release(self) -> None:
        """End a mutable borrow: waits for work using this partition, then frees the tensor."""
        if self.mode != "borrow" or self.moved is not None:
            return
        wait_for(self.tensor)
        self.moved = MoveRecord(user_site(2), "ended its borrow", self.id, "borrow ended here")
        src = self._source
        if src is not None and src.moved is not None and src.moved.partition_id == self.id:
            src.moved = None

    def __enter__(self) -> "Partition":
        if self.mode == "borrow" and self._source is not None and self._source.moved is None:
            self._source.moved = MoveRecord(
                self.origin, "is mutably borrowed by a partition until its `with` block ends; "
                "it was borrowed", self.id, "mutably borrowed here")
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        dims = ", ".join(map(str, self.tensor.shape))
        text = (f"Partition({self.tensor.dtype}[{dims}] in {self.tile_shape} tiles, grid "
                f"{self.grid}{', ragged' if self.ragged else ''}"
                f"{', borrowed' if self.mode == 'borrow' else ''}")
        if self.moved is not None:
            text += f", used up at {describe(self.moved.where)}"
        return text + ")"


def wait_for(tensor) -> None:
    """Wait for every in-flight flight that touches ``tensor``'s memory."""
    from cutile_lab.runtime.ops import wait_flight
    for f in ownership.live_flights():
        if any(e.tensor is tensor for e in f.entries) or any(k is tensor for k in f.keep):
            wait_flight(f)


def partition(tensor, tile_shape, where=None) -> Partition:
    """``tensor.partition(tile_shape)``: the move (``where``: the user's line, found when not
    given)."""
    tensor._check("partition it", host=False)
    tile = _tile_shape(tensor, tile_shape)
    if where is None:
        where = user_site(2)
    # views of this memory taken before the move end with it (E0505); the partition's own
    # view, made just after, lives on
    storage = tensor.storage
    if storage.moves is None:
        storage.moves = []
    storage.moves.append((tensor.id, tensor.range[0], tensor.range[1], where,
                          weakref.ref(tensor)))
    p = Partition(tensor._alias(), tile, "move", origin=where)
    tensor.moved = MoveRecord(where, f"was moved into a partition of {tile} tiles", p.id,
                              "moved into a partition here")
    return p


def _name_in_any_frame(obj) -> str | None:
    """The name some frame on the stack binds to ``obj`` (the moved tensor is often not in the
    frame that uses the view, e.g. a lambda's); error path only."""
    import sys
    from cutile_lab.runtime.callsite import _INTERNAL_PREFIXES
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename.startswith(_INTERNAL_PREFIXES):
            f = f.f_back
            continue
        for scope in (f.f_locals, f.f_globals):
            for k, v in list(scope.items()):
                if v is obj and not k.startswith("_"):
                    return k
        f = f.f_back
    return None


def raise_dead_view(view, what: str, where=None, how: str = "read", name=None) -> None:
    """Refuse a use of a view that a later move into a partition ended (rustc's E0505);
    ``name``: what the user calls it (a partition's name for the view it holds)."""
    from cutile_lab.diagnostics import Diagnostic, Label
    from cutile_lab.runtime.callsite import as_span, user_call_site, user_name_of
    _, _, _, moved_at, ref = view.dead_view()
    moved_at = as_span(moved_at)
    where = as_span(where) or user_call_site()
    name = name or view.name or user_name_of(view)
    moved = ref()
    base = (moved.name or _name_in_any_frame(moved)) if moved is not None else None
    this = f"`{name}`" if name else "this view"
    of = f"`{base}`" if base else "the tensor it views"
    labels = (Label(moved_at, f"{of} is moved into a partition here"),) if moved_at else ()
    raise ownership.OwnershipError([Diagnostic(
        "TL102", "error",
        f"cannot {what}: {this} is a view taken before {of} was moved into a partition at "
        f"{describe(moved_at)}, so it ended with the move", where, labels,
        help=f"take the view after the work is done, from the tensor the launch hands back, or "
             f"borrow with `{base or 't'}.partition_mut(...)` instead of moving it",
        notes=["a partition owns its memory: a view taken before the move would read or write "
               "it behind the partition's back (like rustc's E0505, a move out of a value "
               "that is still borrowed)"])])


def partition_mut(tensor, tile_shape, where=None) -> Partition:
    """``tensor.partition_mut(tile_shape)`` (``where``: the user's line, found when not given)."""
    if tensor.moved is not None or tensor.storage.moves is not None:
        tensor._check("borrow it mutably (partition_mut)", host=False)
    if type(tile_shape) is int and tile_shape > 0 and len(tensor.shape) == 1:
        tile = (tile_shape,)          # the common case: every check of ``_tile_shape`` passes
    else:
        tile = _tile_shape(tensor, tile_shape)
    return Partition(tensor._alias(), tile, "borrow", tensor,
                     where if where is not None else user_site(2))


__all__ = ["Partition", "partition", "partition_mut", "wait_for"]
