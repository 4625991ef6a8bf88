"""The borrow state of the host: which tensors are moved into partitions and which are borrowed
by queued work, as the runtime reports them, and the diagnostic (TL102-TL105) for a host access
or a launch that would break that ownership.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

from cutile_lab.diagnostics import Diagnostic, Label, Span

Use = Literal["read", "write", "launch", "launch_mut"]

@dataclass
class _Borrow:
    key: object
    description: str
    where: Span | None
    mutable: bool


def _op_key(op) -> object:
    try:
        hash(op)
        return op
    except TypeError:
        return ("id", id(op))


def _describe(op, description: str | None) -> str:
    if description:
        return description
    if isinstance(op, str):
        return op
    return getattr(op, "description", None) or getattr(op, "name", None) or repr(op)


class BorrowState:
    """Who owns each tensor right now, as the runtime sees it.

    The runtime reports: ``moved(tensor_id, where)`` when a tensor is moved into a partition,
    ``restored(tensor_id)`` when ownership comes back (the launch's result, an un-partition),
    ``borrow_mut``/``borrow_shared(tensor_id, op, where)`` when it queues work that writes/reads
    the tensor, and ``release(op)`` when that work completes. It asks ``check_use(tensor_id, how,
    where)`` before touching a tensor: ``how`` is ``'read'``/``'write'`` for host access,
    ``'launch'`` for a launch that reads it and ``'launch_mut'`` for one that writes it.
    Thread-safe (completion callbacks may run on another thread)."""

    def __init__(self) -> None:
        # Reentrant: a garbage collection inside a locked section can run a tensor's __del__,
        # which reports back here (``restored``) on the same thread.
        self._lock = threading.RLock()
        self._moved: dict[int, Span | None] = {}
        self._borrows: dict[int, list[_Borrow]] = {}
        self._by_op: dict[object, set[int]] = {}

    # updates

    def moved(self, tensor_id: int, where: Span | None = None) -> None:
        with self._lock:
            self._moved[tensor_id] = where

    def restored(self, tensor_id: int) -> None:
        with self._lock:
            self._moved.pop(tensor_id, None)

    def borrow_mut(self, tensor_id: int, op, where: Span | None = None,
                   description: str | None = None) -> None:
        self._borrow(tensor_id, op, where, description, True)

    def borrow_shared(self, tensor_id: int, op, where: Span | None = None,
                      description: str | None = None) -> None:
        self._borrow(tensor_id, op, where, description, False)

    def _borrow(self, tensor_id, op, where, description, mutable) -> None:
        key = _op_key(op)
        b = _Borrow(key, _describe(op, description), where, mutable)
        with self._lock:
            self._borrows.setdefault(tensor_id, []).append(b)
            self._by_op.setdefault(key, set()).add(tensor_id)

    def release(self, op) -> None:
        """The work ``op`` has completed: its borrows end."""
        key = _op_key(op)
        with self._lock:
            for tid in self._by_op.pop(key, ()):
                left = [b for b in self._borrows.get(tid, ()) if b.key != key]
                if left:
                    self._borrows[tid] = left
                else:
                    self._borrows.pop(tid, None)

    def clear(self) -> None:
        with self._lock:
            self._moved.clear()
            self._borrows.clear()
            self._by_op.clear()

    # queries

    def is_moved(self, tensor_id: int) -> bool:
        return tensor_id in self._moved

    def in_flight(self, tensor_id: int) -> list[tuple[str, bool, Span | None]]:
        """(description, mutable, where launched) of the work still using ``tensor_id``."""
        return [(b.description, b.mutable, b.where) for b in self._borrows.get(tensor_id, ())]

    def check_use(self, tensor_id: int | None, how: Use, where: Span | None = None,
                  name: str | None = None, *, allow_moved: bool = False,
                  param: str | None = None) -> Diagnostic | None:
        """A diagnostic if using ``tensor_id`` this way now would break ownership, else None.

        ``name``: the user's name of the tensor; ``param``: the kernel parameter it is passed
        as, for a launch (the message names both when they differ)."""
        if tensor_id is None or (not self._moved and not self._borrows):
            return None
        with self._lock:
            moved = tensor_id in self._moved
            moved_at = self._moved.get(tensor_id)
            borrows = list(self._borrows.get(tensor_id, ()))
        what = f"`{name}`" if name else "this tensor"
        if param and param != name:
            what = f"`{name}` (as `{param}`)" if name else f"the argument `{param}`"
        if moved and not allow_moved:
            verb = {"read": "read on the host", "write": "written on the host",
                    "launch": "passed to a launch", "launch_mut": "passed to a launch"}.get(
                        how, "used")
            labels = (Label(moved_at, f"{what} was moved into a partition here"),) \
                if moved_at is not None else ()
            return Diagnostic(
                "TL102", "error", f"{what} was moved into a partition, so it cannot be {verb} "
                                  "directly", where, labels,
                help="use the partition instead, or take the tensor back with "
                     "`p.unpartition()`; to keep the tensor usable, borrow it with "
                     "`t.partition_mut(...)` instead of moving it",
                notes=("a partition owns its tensor's memory: each of its tiles belongs to one "
                       "kernel instance, so nothing else may touch the tensor meanwhile",))
        writer = next((b for b in borrows if b.mutable), None)
        if writer is not None:
            label = (Label(writer.where, f"`{writer.description}` was launched here and may "
                                         "still be running"),) if writer.where else ()
            if how in ("read", "write"):
                return Diagnostic(
                    "TL103", "error", f"{what} cannot be {'read' if how == 'read' else 'written'}"
                                      f" on the host: `{writer.description}` is still writing "
                                      "it", where, label,
                    help="wait for that work first (call `.sync()` on it, or `await` it), then "
                         "access the tensor",
                    notes=("until the work completes, the tensor may hold a mix of old and new "
                           "tiles",))
            return Diagnostic(
                "TL104", "error", f"{what} cannot be passed to this launch: `{writer.description}`"
                                  ", still in flight, is writing it", where, label,
                help="wait for that work first, or chain the two with `.then(...)` so that they "
                     "run in order")
        if how in ("write", "launch_mut"):
            reader = next((b for b in borrows if not b.mutable), None)
            if reader is not None:
                label = (Label(reader.where, f"`{reader.description}` was launched here and may "
                                             "still be running"),) if reader.where else ()
                action = "written on the host" if how == "write" else \
                    "passed as an output of this launch"
                return Diagnostic(
                    "TL105", "error", f"{what} cannot be {action}: `{reader.description}`, still "
                                      "in flight, is reading it", where, label,
                    help="wait for that work first, or chain the two with `.then(...)`",
                    notes=("changing the tensor now would change what the running work reads",))
        return None

