"""Host-side checks of the kernel library's arguments, run before anything is compiled or
launched: what each argument is (a tensor, on the backend's device), its rank, dtype and shape
against the others (inner dimensions of a product, broadcasting, a norm's weight against the
rows), and the options (``dim=``, tile sizes). A refused call raises a ``KernelDiagnosticsError``
with one ``TL15x`` diagnostic whose primary span is the user's call (found outside the lab, as
the launch rules find it) and whose label sits under the argument it names.

Owns nothing but the checks and their messages; the host functions (``host``) call them.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import sys
import textwrap
from typing import Iterable, Sequence

from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.errors import KernelDiagnosticsError
from cutile_lab.runtime.backend import backend as current_backend
from cutile_lab.runtime.tensor import Tensor

# what each argument is, by the host function's (name, position) of it
Arg = tuple[str, int | None]

FLOATS = ("f16", "bf16", "f32")
NUMERIC = ("f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64")


def _user_frame():
    from cutile_lab.runtime.callsite import _INTERNAL_PREFIXES
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_INTERNAL_PREFIXES):
        f = f.f_back
    return f


def _call_spans(arg: Arg | None) -> tuple[Span | None, Span | None]:
    """The span of the function named in the user's call (the whole line where the source
    cannot be parsed) and of the argument ``arg`` inside the call (``None`` where it cannot be
    found, e.g. the call came through ``functools.partial`` or ``*args``)."""
    f = _user_frame()
    if f is None:
        return None, None
    filename = f.f_code.co_filename
    try:
        pos = inspect.getframeinfo(f).positions
    except Exception:                                            # noqa: BLE001
        pos = None
    if pos is None or pos.lineno is None or pos.col_offset is None:
        return Span(filename, f.f_lineno), None
    call = Span(filename, pos.lineno, pos.col_offset, pos.end_lineno, pos.end_col_offset)
    if arg is None:
        return call, None
    lines = [linecache.getline(filename, n) for n in range(pos.lineno, (pos.end_lineno or
                                                                        pos.lineno) + 1)]
    if not lines or not lines[0]:
        return call, None
    lines[-1] = lines[-1][:pos.end_col_offset] if pos.end_col_offset is not None else lines[-1]
    lines[0] = lines[0][pos.col_offset:]
    try:
        node = ast.parse(textwrap.dedent("".join(lines)).strip(), mode="eval").body
    except SyntaxError:
        return call, None
    if not isinstance(node, ast.Call):
        return call, None

    def span(n):
        line = pos.lineno + n.lineno - 1
        col = n.col_offset + (pos.col_offset if n.lineno == 1 else 0)
        end_line = pos.lineno + (n.end_lineno or n.lineno) - 1
        end_col = (n.end_col_offset or 0) + (pos.col_offset if n.end_lineno == 1 else 0)
        return Span(filename, line, col, end_line, end_col)
    call = span(node.func)             # the function's name: the arguments get the labels
    name, index = arg
    target = next((k for k in node.keywords if k.arg == name), None)
    if target is None and index is not None and index < len(node.args) and \
            not any(isinstance(a, ast.Starred) for a in node.args[:index + 1]):
        target = node.args[index]
    return call, (span(target) if target is not None else None)


def refuse(code: str, message: str, *, arg: Arg | None = None, label: str = "",
           help: str | None = None, notes: Iterable[str] = ()) -> None:
    """Raise the library's error ``code`` at the user's call, labelling ``arg``."""
    call, at = _call_spans(arg)
    labels = (Label(at, label),) if at is not None and label else ()
    raise KernelDiagnosticsError([Diagnostic(code, "error", message, call, labels, help,
                                             tuple(notes))])


def shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


# --- what an argument is ------------------------------------------------------------------------

def tensor(value, arg: Arg, fn: str):
    """``value`` as the runtime's tensor on the current backend, or TL150 / TL154."""
    if type(value) is Tensor and value.storage.backend == current_backend():
        return value                     # the common case: one type test, one comparison
    return _convert(value, arg, fn)


def alike(x, y, allowed: Sequence[str], same_shape: bool = True) -> bool:
    """Are ``x`` and ``y`` tensors of the current backend, on one device, of one dtype among
    ``allowed`` (and, with ``same_shape``, of one shape)? What ``tensor``, ``same_device``,
    ``dtype_in``, ``same_dtype`` (and ``broadcast_shape``) all accept, tested at once: the
    common call of a library function. False: the caller checks them one by one (and words
    what is wrong)."""
    if type(x) is not Tensor or type(y) is not Tensor or x.dtype is not y.dtype \
            or (same_shape and x.shape != y.shape) or x.dtype.name not in allowed:
        return False
    sx, sy = x.storage, y.storage
    b = current_backend()
    if sx.backend != b or sy.backend != b:
        return False
    return b != "gpu" or sx.device_id == sy.device_id


def _convert(value, arg: Arg, fn: str):
    """``tensor`` for anything but a tensor of the current backend: wrapped, copied, refused."""
    from cutile_lab.errors import CutileLabError
    from cutile_lab.runtime import Tensor, asarray, backend, from_numpy
    import numpy as np
    name = arg[0]
    if isinstance(value, (str, bytes, dict, set)) or value is None or callable(value) and \
            not hasattr(value, "__array__"):
        refuse("TL150", f"`{name}` of `{fn}` must be a tensor, not {type(value).__name__}",
               arg=arg, label=f"this is {type(value).__name__}",
               help="pass a cutile_lab, PyTorch, CuPy or NumPy array")
    if isinstance(value, Tensor):
        t = value
    elif isinstance(value, np.ndarray) and backend() == "gpu":
        if value.dtype == object:
            _not_numeric(value, arg, fn)
        t = from_numpy(value).sync()
    else:
        try:
            t = asarray(value)
        except CutileLabError:
            raise
        except Exception:                                       # noqa: BLE001
            _not_numeric(value, arg, fn)
    if t.backend != backend():
        where = "the simulator" if backend() == "sim" else "the GPU"
        refuse("TL154", f"`{name}` of `{fn}` is on {t.device}, but the lab runs on {where}",
               arg=arg, label=f"this is on {t.device}",
               help=f"move it first, or choose its backend with cl.set_backend("
                    f"'{t.backend}')")
    return t


def _not_numeric(value, arg: Arg, fn: str) -> None:
    refuse("TL150", f"`{arg[0]}` of `{fn}` must be a tensor of numbers, not "
           f"{type(value).__name__}", arg=arg, label=f"this is {type(value).__name__}",
           help="pass a cutile_lab, PyTorch, CuPy or NumPy array of a numeric dtype")


def same_device(fn: str, tensors: Sequence[tuple[Arg, object]]) -> None:
    """GPU tensors of one call live on one device (TL154)."""
    first = None
    for arg, t in tensors:
        if t.backend != "gpu":
            continue
        if first is None:
            first = (arg, t)
        elif t.device != first[1].device:
            refuse("TL154", f"`{arg[0]}` of `{fn}` is on {t.device}, but `{first[0][0]}` is on "
                   f"{first[1].device}", arg=arg, label=f"this is on {t.device}",
                   help="put every tensor of one call on the same GPU")


def dtype_in(fn: str, arg: Arg, t, allowed: Sequence[str]) -> None:
    if t.dtype.name not in allowed:
        refuse("TL153", f"`{fn}` takes `{arg[0]}` of dtype {' / '.join(allowed)}, not "
               f"{t.dtype.name}", arg=arg, label=f"this is {t.dtype.name}",
               help=f"convert it to one of {', '.join(allowed)} first")


def same_dtype(fn: str, first: tuple[Arg, object], *others: tuple[Arg, object]) -> None:
    (a0, t0) = first
    for arg, t in others:
        if t.dtype is not t0.dtype:
            refuse("TL153", f"`{arg[0]}` of `{fn}` is {t.dtype.name}, but `{a0[0]}` is "
                   f"{t0.dtype.name}: the kernel computes in one dtype",
                   arg=arg, label=f"this is {t.dtype.name}",
                   help=f"convert `{arg[0]}` to {t0.dtype.name} (the library never converts "
                        "behind your back)")


def rank_in(fn: str, arg: Arg, t, ranks: Sequence[int], what: str) -> None:
    if t.ndim not in ranks:
        want = " or ".join(map(str, ranks))
        refuse("TL151", f"`{fn}` takes `{arg[0]}` with {want} dimension(s) ({what}), but it "
               f"has {t.ndim}: shape {shape_text(t.shape)}", arg=arg,
               label=f"shape {shape_text(t.shape)}",
               help=f"reshape `{arg[0]}` to {what}")


def shape_mismatch(fn: str, arg: Arg, t, message: str, help: str) -> None:
    refuse("TL152", f"`{fn}`: {message}", arg=arg, label=f"shape {shape_text(t.shape)}",
           help=help)


def broadcast_shape(fn: str, a: tuple[Arg, object], b: tuple[Arg, object]) -> tuple[int, ...]:
    """PyTorch's (NumPy's) broadcast of two shapes, or TL152 naming the dimension."""
    (aa, ta), (ab, tb) = a, b
    sa, sb = tuple(ta.shape), tuple(tb.shape)
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    out = []
    for d, (x, y) in enumerate(zip(pa, pb)):
        if x != y and 1 not in (x, y):
            shape_mismatch(fn, ab, tb, f"`{aa[0]}` {shape_text(sa)} and `{ab[0]}` "
                           f"{shape_text(sb)} do not broadcast: dimension {d - n} is {x} "
                           f"against {y}",
                           "broadcasting pairs dimensions from the right; each pair must be "
                           "equal or one of them 1")
        out.append(y if x == 1 else x)
    return tuple(out)


def dim_index(fn: str, dim, ndim: int) -> int:
    """``dim`` (negative counts from the end) as an index into ``ndim`` dimensions (TL155)."""
    rank = max(ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, int) and not hasattr(dim, "__index__"):
        refuse("TL155", f"`{fn}`: dim={dim!r} is not an int", arg=("dim", None),
               label="this", help=f"pass an int in [{-rank}, {rank - 1}]")
    d = int(dim)
    if not -rank <= d < rank:
        refuse("TL155", f"`{fn}`: dim={d} is out of range for a tensor of {ndim} dimension(s)",
               arg=("dim", None), label=f"expected {-rank} .. {rank - 1}",
               help=f"pass a dimension in [{-rank}, {rank - 1}] (-1 is the last)")
    return d % rank


def tile_size(fn: str, name: str, value, *, pow2: bool = True) -> int | None:
    """A caller's tile-size override: ``None`` (the library chooses), or a positive power of two
    (TL155)."""
    if value is None:
        return None
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0 and \
        (not pow2 or value & (value - 1) == 0)
    if not ok:
        refuse("TL155", f"`{fn}`: {name}={value!r} is not a valid tile size",
               arg=(name, None), label="this",
               help=f"tile sizes are positive powers of two (e.g. {name}=64), or leave "
                    f"`{name}` out to use the tuned one")
    return value


def positive_number(fn: str, name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not v > 0 or v == float("inf"):
        refuse("TL155", f"`{fn}`: {name}={value!r} must be a positive number",
               arg=(name, None), label="this", help=f"pass a positive float for `{name}`")
    return v
