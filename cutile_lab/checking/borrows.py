"""The wording of ownership over time, and a store of it for hosts without a runtime.

Owns ``use_diagnostic``: the diagnostic (TL102-TL105) for a host access or a launch that would
break the ownership a ``BorrowView`` reports (the tensor moved into a partition, or in-flight work
writing or reading it). A ``BorrowView`` is what the launch rules ask (``check_launch``,
``check_cuda_launch``): is anything moved or borrowed at all, and for one tensor id, where was it
moved and which work borrows it (``BorrowFact``s).

There is one record of what the *runtime's* in-flight work borrows: the byte-range registry of
``runtime/ownership.py``, which words its conflicts with ``use_diagnostic`` from the facts of the
conflicting flight (it never copies them anywhere). ``BorrowState`` is a small store of the same
facts for a host that has no runtime: the catalog's simulated launch snippets (``SimHost``) and
the checker's own tests report moves and borrows into it by tensor id.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from cutile_lab.diagnostics import Diagnostic, Label, Span

Use = Literal["read", "write", "launch", "launch_mut"]


class BorrowFact(NamedTuple):
    """Work that borrows a tensor: what it is, whether it writes, and where it was launched."""

    description: str
    mutable: bool
    where: Span | None


class BorrowView(Protocol):
    """What the launch rules ask of the host's ownership state."""

    def active(self) -> bool:
        """Is anything moved or borrowed at all (else nothing can conflict)?"""

    def moved_at(self, tensor_id: int) -> tuple[bool, Span | None]:
        """(moved into a partition, where) of the tensor ``tensor_id``."""

    def borrows(self, tensor_id: int) -> list[BorrowFact]:
        """The work still using ``tensor_id``."""


@dataclass
class _Borrow:
    key: object
    fact: BorrowFact

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
    """Who owns each tensor right now, for a host without a runtime (a ``BorrowView``).

    The host reports: ``moved(tensor_id, where)`` when a tensor is moved into a partition,
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
        b = _Borrow(key, BorrowFact(_describe(op, description), mutable, where))
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

    # queries (the BorrowView)

    def active(self) -> bool:
        return bool(self._moved or self._borrows)

    def is_moved(self, tensor_id: int) -> bool:
        return tensor_id in self._moved

    def moved_at(self, tensor_id: int) -> tuple[bool, Span | None]:
        with self._lock:
            return tensor_id in self._moved, self._moved.get(tensor_id)

    def borrows(self, tensor_id: int) -> list[BorrowFact]:
        with self._lock:
            return [b.fact for b in self._borrows.get(tensor_id, ())]

    def in_flight(self, tensor_id: int) -> list[BorrowFact]:
        """(description, mutable, where launched) of the work still using ``tensor_id``."""
        return self.borrows(tensor_id)

    def check_use(self, tensor_id: int | None, how: Use, where: Span | None = None,
                  name: str | None = None, *, allow_moved: bool = False,
                  param: str | None = None) -> Diagnostic | None:
        """``use_diagnostic`` of this store's facts about ``tensor_id``."""
        if tensor_id is None or not self.active():
            return None
        moved, moved_at = self.moved_at(tensor_id)
        return use_diagnostic(how, where, name, moved=moved and not allow_moved,
                              moved_at=moved_at, borrows=self.borrows(tensor_id), param=param)


def use_diagnostic(how: Use, where: Span | None, name: str | None, *, moved: bool = False,
                   moved_at: Span | None = None, borrows: list[BorrowFact] | tuple = (),
                   param: str | None = None) -> Diagnostic | None:
    """A diagnostic if using a tensor this way now would break ownership, else None: TL102 when
    it was ``moved`` into a partition (at ``moved_at``), TL103/TL104 when work in ``borrows``
    writes it, TL105 when it would be written while work reads it.

    ``name``: the user's name of the tensor; ``param``: the kernel parameter it is passed as,
    for a launch (the message names both when they differ)."""
    what = f"`{name}`" if name else "this tensor"
    if param and param != name:
        what = f"`{name}` (as `{param}`)" if name else f"the argument `{param}`"
    if moved:
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


__all__ = ["Use", "BorrowFact", "BorrowView", "BorrowState", "use_diagnostic"]
