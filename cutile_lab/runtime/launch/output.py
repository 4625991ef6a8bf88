"""A launch into a new output: what the kernel library's host functions build.

Owns ``OutputLaunchOp`` (a ``LaunchOp`` whose first parameter gets a new tensor, allocated when
the launch is enqueued, stream-ordered on its stream; the op's result is that tensor),
``OutputPlan`` (what a call works out from its key alone — kernel, output shape, dtype and tile,
number of positional arguments, const keywords — kept per key, so that a repeated library call
only binds its arguments) and the entry point ``launch_into``. Every start of such an op runs
``LaunchOp._enqueue``, the one start path, with all its checks.
"""
from __future__ import annotations

from types import SimpleNamespace

from cutile_lab.runtime.callsite import user_site
from cutile_lab.runtime.creation import new_tensor
from cutile_lab.runtime.dtypes import as_dtype
from cutile_lab.runtime.launch.binding import SCALARS, as_arg, kernel_info, plain_backend
from cutile_lab.runtime.launch.op import LaunchOp
from cutile_lab.runtime.ops import DeviceOp, ExecContext
from cutile_lab.runtime.partition import Partition, _tile_shape
from cutile_lab.runtime.tensor import Tensor, normalize_shape

# (shape, dtype, tile) as a library call gives them -> normalized (shape, DType, tile shape)
_OUTPUTS: dict = {}


def _output_of(shape, dtype, tile) -> tuple:
    """(shape, DType, tile shape) of a new output, normalized (kept per key as given)."""
    key = (shape, getattr(dtype, "name", dtype), tile)   # a DType hashes slowly
    try:
        out = _OUTPUTS.get(key)
    except TypeError:                 # a list for a shape: normalized every time
        out = key = None
    if out is None:
        shape = normalize_shape(shape)
        out = (shape, as_dtype(dtype),
               _tile_shape(SimpleNamespace(ndim=len(shape), shape=shape), tile))
        if key is not None:
            if len(_OUTPUTS) > 1024:
                _OUTPUTS.clear()
            _OUTPUTS[key] = out
    return out


class OutputLaunchOp(LaunchOp):
    """A launch whose first parameter gets a new tensor, allocated when the launch is enqueued
    (stream-ordered on the launch's stream) and moved into a partition of ``tile`` tiles; the
    op's result is that tensor. What the kernel library's host functions build: no allocation
    before the op, no partition object of the caller's, no ``.then`` to take the tensor back."""

    _plain = False

    def __init__(self, kernel, shape, dtype, tile, args, kwargs, where=None):
        self._out = _output_of(shape, dtype, tile)
        self.kernel = kernel
        self.info = info = kernel_info(kernel)
        self.label = info.name
        self._where = where if where is not None else user_site(2)
        names = info.names
        self._fresh = names[0]
        args = (None,) + tuple(args)
        if not kwargs and not info.consts and len(args) == len(names):
            self.bound = dict(zip(names, args))
        else:
            self.bound, consts = self._bind(args, kwargs)
            if consts:
                self.explicit_consts = consts
                self._consts_key = tuple(sorted(consts.items()))
        self._take_inputs(args[1:])

    def _take_inputs(self, inputs) -> None:
        """The op's backend (that of its first tensor) and whether its inputs need no resolving
        (tensors, partitions, numbers: copied as they are)."""
        self.backend, self._inputs_plain = plain_backend(inputs)

    def _resolve(self, ctx: ExecContext):
        shape, dtype, tile = self._out
        out = self._fresh
        where = self._where
        if self._inputs_plain:
            values = self.bound.copy()
            # ``creation.new_tensor`` without its frame: the backend's memory for the chain
            values[out] = Partition(ctx.backend.new_tensor(ctx, shape, dtype, where), tile,
                                    "move", None, where)
            return values, values
        values: dict = {}
        for name, v in self.bound.items():
            if name == out:
                v = Partition(new_tensor(ctx, shape, dtype, self._where), tile, "move", None,
                              self._where)
            elif isinstance(v, DeviceOp):
                v = as_arg(v._enqueue(ctx))
            elif type(v) is not Tensor and not isinstance(v, SCALARS):
                v = as_arg(v)
            values[name] = v
        return values, values

    def _result_of(self, returned):
        return returned[self._fresh].tensor


class OutputPlan:
    """What ``launch_into`` works out from (kernel, output shape, dtype, tile, number of
    positional arguments, const keywords) alone, kept per such key: the kernel's info, the
    normalized output, the parameters the arguments bind in order, the explicit consts. A call
    of a known key (``op``) then only binds its arguments and finds their backend; everything
    that depends on the arguments themselves — the checks of every start included — is the
    op's, as for any launch."""

    __slots__ = ("kernel", "info", "out", "names", "consts", "consts_key")

    def __init__(self, first: OutputLaunchOp):
        """The plan of ``first``'s key (``first`` bound its arguments the ordinary way)."""
        self.kernel = first.kernel
        self.info = first.info
        self.out = first._out
        self.names = tuple(first.bound)
        self.consts = first.explicit_consts
        self.consts_key = first._consts_key

    def op(self, args: tuple, where) -> OutputLaunchOp:
        """A new op of this plan's key (``args``: its positional inputs, a tuple)."""
        op = OutputLaunchOp.__new__(OutputLaunchOp)
        op.kernel = self.kernel
        op.info = info = self.info
        op.label = info.name
        op._where = where
        op._out = self.out
        op._fresh = self.names[0]
        op.bound = dict(zip(self.names, (None,) + args))
        if self.consts:
            op.explicit_consts = self.consts
            op._consts_key = self.consts_key
        op._take_inputs(args)
        return op

    def serves(self, kernel) -> bool:
        """Is this plan still right for ``kernel`` (its definition not replaced)?"""
        return self.info.kdef is kernel.definition


_PLANS: dict = {}     # launch_into's key -> OutputPlan


def output_plan(kernel, shape, dtype, tile, args: tuple, kwargs: dict) -> OutputPlan | None:
    """The ``OutputPlan`` of ``launch_into(kernel, shape, dtype, tile, *args, **kwargs)``'s key
    (made by binding this call the ordinary way when it is new: a call that does not bind
    raises its error then); None where no plan applies: keywords that bind parameters, or a
    key that cannot be hashed (a list for a shape)."""
    key = (kernel, shape, getattr(dtype, "name", dtype), tile, len(args),
           tuple(kwargs.items()) if kwargs else ())
    try:
        plan = _PLANS.get(key)
    except TypeError:
        return None
    if plan is not None and plan.serves(kernel):
        return plan
    first = OutputLaunchOp(kernel, shape, dtype, tile, args, kwargs, user_site(2))
    bound = list(first.bound)
    if bound != first.info.names[:len(args) + 1] or set(kwargs) - set(first.explicit_consts):
        return None                   # keywords bind parameters: bound per call
    if len(_PLANS) > 1024:
        _PLANS.clear()
    plan = _PLANS[key] = OutputPlan(first)
    return plan


def launch_into(kernel, shape, dtype, tile, *args, **kwargs) -> LaunchOp:
    """``kernel(new.partition(tile), *args, **kwargs)`` with ``new`` a tensor of ``shape`` and
    ``dtype`` allocated when the launch runs; the op's result is that tensor (``.sync()`` it).
    What depends only on the call's key is worked out once (``output_plan``)."""
    plan = output_plan(kernel, shape, dtype, tile, args, kwargs)
    if plan is None:
        return OutputLaunchOp(kernel, shape, dtype, tile, args, kwargs, user_site(2))
    return plan.op(args, user_site(2))


__all__ = ["OutputLaunchOp", "OutputPlan", "output_plan", "launch_into"]
