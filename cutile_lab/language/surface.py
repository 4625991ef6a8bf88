"""The names a kernel body may use, grouped by what the ownership discipline allows.

This is the one list the frontend, the checker, the lowering and the simulator share, so a name
added here is known to all of them.
"""
from __future__ import annotations

# Ownership-checked memory forms of the safe language.
SAFE_MEMORY = {"load_tile_like", "load_tile", "tile_id", "num_tiles"}
# ``padding=`` of a load: the language's spelling -> cuTile's ``PaddingMode`` member.
PADDINGS = {"zero": "ZERO", "neg_inf": "NEG_INF", "pos_inf": "POS_INF", "nan": "NAN"}
# Raw memory operations: only inside ``with unsafe():``.
RAW_MEMORY = {"store", "load", "gather", "scatter", "atomic_add", "atomic_and", "atomic_cas",
              "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor",
              "load_advanced_indexing", "store_advanced_indexing", "bid", "num_blocks"}
# cuTile Python's op library, usable bare in a kernel body (lowered to ``ct.<name>``).
OPS = {
    "abs", "add", "arange", "argmax", "argmin", "astype", "atan2", "bitcast", "broadcast_to",
    "cat", "cdiv", "ceil", "cos", "cosh", "cumprod", "cumsum", "equal", "exp", "exp2",
    "expand_dims", "extract", "floor", "floordiv", "full", "greater", "greater_equal", "isnan",
    "less", "less_equal", "log", "log2", "matmul", "max", "maximum", "min", "minimum", "mma",
    "mod", "mul", "negative", "not_equal", "ones", "permute", "pow", "prod", "reshape", "rsqrt",
    "sin", "sinh", "sqrt", "sub", "sum", "tan", "tanh", "transpose", "truediv", "where", "zeros",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_lshift",
    "bitwise_rshift", "printf", "static_assert", "assert_",
}
# Python builtins a kernel may call; everything else of Python's builtins is unsupported.
PY_BUILTINS = {"range", "min", "max", "len", "int", "float", "bool", "abs", "sum", "print"}
# Names that exist in the language itself.
LANGUAGE_NAMES = {"unsafe", "Tensor", "Mut", "Const", "cl", "ct", "True", "False", "None"}


def dtype_names() -> set[str]:
    from cutile_lab.language.dtypes import ALIASES, DTYPES
    return set(DTYPES) | set(ALIASES)


def all_known_names() -> set[str]:
    return SAFE_MEMORY | RAW_MEMORY | OPS | PY_BUILTINS | LANGUAGE_NAMES | dtype_names()
