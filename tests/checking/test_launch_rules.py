"""Launch-level rules: aliasing of views, ownership over time, arguments against the signature."""
from __future__ import annotations

import timeit

import pytest

from cutile_lab.catalog import SimHost
from cutile_lab.checking.borrows import BorrowState
from cutile_lab.checking.launch_args import ArgDesc, views_overlap
from cutile_lab.checking.launch_rules import check_launch
from cutile_lab.diagnostics import CODES, Span
from cutile_lab.language.frontend import KernelSource, parse_kernels

from tests.checking.launch_corpus import LAUNCHES

BASE = 0x7000_0000


def _kernel(text: str):
    [k] = parse_kernels(KernelSource(text, "<k>"), all_functions=True)
    return k


ADD = _kernel('''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
''')


def _arr(name, role, ptr, shape, strides=None, itemsize=4, dtype="f32", tid=None, tile=None):
    if strides is None:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    return ArgDesc(name, role, ptr, tuple(shape), tuple(strides), itemsize, dtype, tid, tile)


# --- byte ranges and the exact overlap test ------------------------------------------------------

def test_extent_counts_views_and_negative_strides():
    assert _arr("a", "shared", BASE, (4, 8)).extent() == (BASE, BASE + 128)
    assert _arr("a", "shared", BASE + 60, (16,), (-1,)).extent() == (BASE, BASE + 64)
    assert _arr("a", "shared", BASE, (0, 8)).extent() == (BASE, BASE)
    assert _arr("a", "shared", BASE, (4, 4), (16, 1)).extent() == (BASE, BASE + 4 * 52)
    assert _arr("a", "shared", BASE, (8,), (0,)).extent() == (BASE, BASE + 4)


@pytest.mark.parametrize("a,b,overlap", [
    # disjoint allocations
    (_arr("a", "mut", BASE, (1024,)), _arr("b", "shared", BASE + 4096, (1024,)), False),
    # touching halves
    (_arr("a", "mut", BASE, (512,)), _arr("b", "shared", BASE + 2048, (512,)), False),
    # one element in common
    (_arr("a", "mut", BASE, (513,)), _arr("b", "shared", BASE + 2048, (512,)), True),
    # even / odd elements
    (_arr("a", "mut", BASE, (512,), (2,)), _arr("b", "shared", BASE + 4, (512,), (2,)), False),
    # even elements of f32 against the second half-word of f16 pairs: bytes interleave
    (_arr("a", "mut", BASE, (512,), (2,)),
     _arr("b", "shared", BASE + 2, (1024,), (4,), itemsize=2, dtype="f16"), True),
    # column blocks of one row-major matrix
    (_arr("a", "mut", BASE, (64, 64), (128, 1)), _arr("b", "shared", BASE + 256, (64, 64),
                                                      (128, 1)), False),
    (_arr("a", "mut", BASE, (64, 65), (128, 1)), _arr("b", "shared", BASE + 256, (64, 64),
                                                      (128, 1)), True),
    # a matrix and its transpose
    (_arr("a", "mut", BASE, (64, 128), (128, 1)), _arr("b", "shared", BASE, (128, 64),
                                                       (1, 128)), True),
    # reversed view of the same memory; of the other half
    (_arr("a", "mut", BASE, (1024,)), _arr("b", "shared", BASE + 4092, (1024,), (-1,)), True),
    (_arr("a", "mut", BASE, (512,)), _arr("b", "shared", BASE + 4092, (512,), (-1,)), False),
    # empty views never overlap
    (_arr("a", "mut", BASE, (0,)), _arr("b", "shared", BASE, (16,)), False),
    # broadcast (stride 0) input inside the output's range
    (_arr("a", "mut", BASE, (16,)), _arr("b", "shared", BASE + 8, (16,), (0,)), True),
])
def test_views_overlap(a, b, overlap):
    assert views_overlap(a, b) is overlap
    assert views_overlap(b, a) is overlap


def test_overlap_search_is_bounded():
    # strides that do not separate: the answer errs on the safe side, quickly
    a = _arr("a", "mut", BASE, (997, 991), (991, 1))
    b = _arr("b", "shared", BASE + 4, (991, 997), (1, 991))
    t = timeit.timeit(lambda: views_overlap(a, b), number=3) / 3
    assert views_overlap(a, b) is True
    assert t < 0.05


# --- the launch corpus --------------------------------------------------------------------------

def test_launch_corpus_size():
    assert sum(1 for case in LAUNCHES if case.code) >= 20
    assert sum(1 for case in LAUNCHES if case.code is None) >= 8


@pytest.mark.parametrize("case", LAUNCHES, ids=[c.name for c in LAUNCHES])
def test_launch_corpus(case):
    diags = SimHost(f"<{case.name}>").run(case.text)
    if case.code is None:
        assert diags == [], [(d.code, d.message) for d in diags]
        return
    assert sorted({d.code for d in diags}) == [case.code], \
        [(d.code, d.message) for d in diags]
    d = next(d for d in diags if d.code == case.code)
    assert d.severity == CODES[case.code].severity
    assert (d.span.line, d.span.col + 1) == (case.line, case.col), d.span
    assert d.help or d.notes


def test_every_launch_code_has_a_case():
    launch_codes = {c for c, info in CODES.items() if info.level == "launch"}
    assert launch_codes <= {c.code for c in LAUNCHES if c.code}


def test_alias_labels_name_both_arguments():
    text = '''def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) * 2.0)

buf = tensor((4096,), f32)
double(buf.partition_mut((128,)), buf)
'''
    [d] = SimHost("<alias>").run(text)
    assert d.code == "TL100"
    messages = [lab.message for lab in d.labels]
    assert "written as `z`" in messages and "read as `x`" in messages
    assert any("E0502" in n for n in d.notes)
    # the primary span is the kernel's name, the labels sit on the arguments
    assert (d.span.line, d.span.col, d.span.end_col) == (5, 0, 6)
    assert {(lab.span.col, lab.span.end_col) for lab in d.labels if lab.span.line == 5} == \
        {(7, 32), (34, 37)}
    # and where the tensors came from
    assert any(lab.span.line == 4 and "comes from here" in lab.message for lab in d.labels)


# --- direct use of check_launch --------------------------------------------------------------

def _good_args():
    return [_arr("z", "mut", BASE, (1024,), tid=1, tile=(128,)),
            _arr("x", "shared", BASE + 0x10000, (1024,), tid=2),
            _arr("y", "shared", BASE + 0x20000, (1024,), tid=3)]


def test_good_launch_is_clean_without_call_site():
    assert check_launch(ADD, _good_args()) == []
    assert check_launch(ADD, _good_args(), None, BorrowState()) == []


def test_explicit_consts_bind_generics():
    d = check_launch(ADD, _good_args(), consts={"B": 64})
    assert [x.code for x in d] == ["TL111"]
    assert "given explicitly" in d[0].message


def test_unknown_addresses_fall_back_to_tensor_ids():
    args = [_arr("z", "mut", 0, (1024,), tid=7, tile=(128,)), _arr("x", "shared", 0, (1024,),
                                                                   tid=7),
            _arr("y", "shared", 0, (1024,), tid=8)]
    assert [d.code for d in check_launch(ADD, args)] == ["TL100"]


def test_numpy_dtype_names_are_accepted():
    args = _good_args()
    args[1] = _arr("x", "shared", BASE + 0x10000, (1024,), dtype="float32", tid=2)
    assert check_launch(ADD, args) == []


def test_const_parameter_binding():
    k = _kernel('''def tiles(z: Mut[Tensor[f32, "BM, BK"]], x: Tensor[f32, "?, ?"], BK: Const[int]):
    z.store(load_tile(x, (tile_id(0), tile_id(1)), (BM, BK)))
''')
    base = [_arr("z", "mut", BASE, (256, 256), tid=1, tile=(64, 32)),
            _arr("x", "shared", BASE + 0x100000, (256, 256), tid=2)]
    assert check_launch(k, base + [ArgDesc("BK", "scalar", value=32)]) == []
    [d] = check_launch(k, base + [ArgDesc("BK", "scalar", value=64)])
    assert d.code == "TL111"


def test_check_launch_is_fast():
    args = _good_args()
    site = Span("<cell>", 3, 0, 3, 20)
    state = BorrowState()
    n = 2000
    per_call = timeit.timeit(lambda: check_launch(ADD, args, site, state), number=n) / n
    assert per_call < 50e-6, f"{per_call * 1e6:.1f} us per launch check"


# --- the borrow state --------------------------------------------------------------------------

def test_borrow_state_lifecycle():
    st = BorrowState()
    here = Span("h.py", 10, 0)
    launched = Span("h.py", 5, 0, 5, 20)
    assert st.check_use(1, "read", here) is None
    st.moved(1, Span("h.py", 3, 0))
    d = st.check_use(1, "read", here, "out")
    assert d.code == "TL102" and d.labels[0].span.line == 3 and "`out`" in d.message
    assert st.check_use(1, "launch_mut", here, allow_moved=True) is None
    st.restored(1)
    assert st.check_use(1, "read", here) is None

    op = object()
    st.borrow_mut(2, op, launched, "gemm")
    for how, code in (("read", "TL103"), ("write", "TL103"), ("launch", "TL104"),
                      ("launch_mut", "TL104")):
        d = st.check_use(2, how, here, "c")
        assert d.code == code, how
        assert d.labels[0].span == launched and "`gemm`" in d.labels[0].message
    st.release(op)
    assert st.check_use(2, "write", here) is None

    st.borrow_shared(3, "softmax #1", launched)
    assert st.check_use(3, "read", here) is None
    assert st.check_use(3, "launch", here) is None
    assert st.check_use(3, "write", here).code == "TL105"
    assert st.check_use(3, "launch_mut", here).code == "TL105"
    assert st.in_flight(3) == [("softmax #1", False, launched)]
    st.release("softmax #1")
    assert st.check_use(3, "write", here) is None and st.in_flight(3) == []


def test_release_only_ends_that_ops_borrows():
    st = BorrowState()
    a, b = object(), object()
    st.borrow_shared(1, a)
    st.borrow_shared(1, b)
    st.release(a)
    assert st.check_use(1, "write", None).code == "TL105"
    st.release(b)
    assert st.check_use(1, "write", None) is None


def test_launch_consults_the_borrow_state():
    st = BorrowState()
    st.borrow_mut(2, "producer", Span("p.py", 1, 0))
    diags = check_launch(ADD, _good_args(), Span("p.py", 2, 0), st)
    assert [d.code for d in diags] == ["TL104"]
    st.clear()
    st.moved(1, Span("p.py", 1, 0))
    assert check_launch(ADD, _good_args(), None, st) == []        # z is the partition itself


def test_borrow_state_survives_reentry_from_a_finalizer():
    """A collection inside a locked section may run a tensor's __del__, which reports back to
    the same BorrowState on the same thread: that must not deadlock."""
    import gc
    import threading

    state = BorrowState()

    class Finalized:
        def __del__(self):
            state.restored(1)

    state.moved(1)
    state.borrow_mut(2, "op")
    done = threading.Event()

    def release_with_garbage():
        with state._lock:                 # what release() holds while it works
            cycle = Finalized()
            cycle.self = cycle
            del cycle
            gc.collect()                  # runs __del__ -> restored() -> the lock again
        state.release("op")
        done.set()

    t = threading.Thread(target=release_with_garbage, daemon=True)
    t.start()
    assert done.wait(10), "BorrowState deadlocked when re-entered from a finalizer"
    assert not state.is_moved(1)


def test_launch_rules_ask_any_borrow_view():
    """``check_launch`` asks the ``BorrowView`` protocol, not ``BorrowState``'s own fields: a view
    of another store (as a runtime would give) is refused and worded the same way."""
    from cutile_lab.checking.borrows import BorrowFact

    launched = Span("p.py", 7, 0)

    class View:
        def active(self):
            return True

        def moved_at(self, tensor_id):
            return False, None

        def borrows(self, tensor_id):
            return [BorrowFact("writer", True, launched)] if tensor_id == 2 else []

    diags = check_launch(ADD, _good_args(), Span("p.py", 9, 0), View())
    assert [d.code for d in diags] == ["TL104"]
    assert "`writer`" in diags[0].message and diags[0].labels[0].span == launched


def test_overlaps_itself_is_exact_on_small_views():
    """A view two of whose elements share a byte, against a brute-force walk of every index, on
    fresh random shapes and strides (zero and negative strides included)."""
    import itertools
    import random
    from cutile_lab.checking.launch_args import overlaps_itself
    rng = random.Random()
    for _ in range(500):
        shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 3)))
        strides = tuple(rng.choice([0, 1, 2, 3, 4, 5, 8, 12, 16, -1, -3]) for _ in shape)
        offsets = [sum(i * s for i, s in zip(idx, strides))
                   for idx in itertools.product(*[range(n) for n in shape])]
        want = len(set(offsets)) < len(offsets)
        assert overlaps_itself(_arr("z", "mut", BASE, shape, strides)) == want, (shape, strides)


# --- the fast paths of the launch check skip no check ---------------------------------------------

GRID2 = _kernel('''def g(z: Mut[Tensor[f32, "A, B"]], w: Mut[Tensor[f32, "A, B"]]):
    z.store(w.load())
''')
ONE3 = _kernel('''def t(z: Mut[Tensor[f32, "A, B, C"]]):
    z.store(z.load())
''')


def _brute_self_overlap(shape, strides):
    import itertools
    offsets = [sum(i * s for i, s in zip(idx, strides))
               for idx in itertools.product(*[range(n) for n in shape])]
    return len(set(offsets)) < len(offsets)


def test_self_overlap_through_check_launch_matches_brute_force():
    """TL123 from the whole launch check (its inline 1-D test, the 2-D test without sorting, the
    general search) against a brute-force walk, on fresh random views of rank 1 to 3, the
    partition one tile of the whole view (so nothing else is wrong)."""
    import random
    rng = random.Random()
    kernels = {1: ADD, 2: GRID2, 3: ONE3}
    seen = set()
    for _ in range(600):
        rank = rng.randint(1, 3)
        shape = tuple(rng.randint(1, 6) for _ in range(rank))
        strides = tuple(rng.choice([0, 1, 2, 3, 4, 5, 6, 8, 12, 16, -1, -2, -3, -7])
                        for _ in shape)
        z = _arr("z", "mut", BASE, shape, strides, tid=1, tile=shape)
        args = [z]
        if rank == 1:
            args += [_arr("x", "shared", BASE + 2**20, shape, tid=2),
                     _arr("y", "shared", BASE + 2**21, shape, tid=3)]
        if rank == 2:
            args.append(_arr("w", "mut", BASE + 2**22, shape, tid=4, tile=shape))
        want = _brute_self_overlap(shape, strides)
        seen.add((rank, want))
        codes = [d.code for d in check_launch(kernels[rank], args, Span("p.py", 1, 0))]
        assert codes == (["TL123"] if want else []), (shape, strides, codes)
    assert len(seen) == 6           # each rank drew both answers


@pytest.mark.parametrize("shape,strides,tile,want", [
    ((8,), (0,), (8,), ["TL123"]),                  # 1-D stride 0: every element one address
    ((8,), (0,), (4,), ["TL123"]),
    ((1,), (0,), (1,), []),                         # one element: nothing to overlap
    ((8,), (-1,), (4,), []),                        # reversed
    ((8,), (3,), (4,), []),                         # stepped
    ((6, 4), (1, 6), (3, 2), []),                   # transposed
    ((6, 4), (16, 2), (3, 2), []),                  # sliced and stepped
    ((4, 6), (-6, 1), (2, 3), []),                  # rows reversed
    ((6, 4), (2, 1), (3, 2), ["TL123"]),            # rows that run into each other
    ((6, 4), (0, 1), (3, 2), ["TL123"]),            # a broadcast row
    ((1, 4), (0, 0), (1, 2), ["TL123"]),            # one row, stride 0 along it
    ((4, 1), (0, 5), (2, 1), ["TL123"]),
    ((6, 4), (4, 1), (4, 2), ["TL114"] * 2),        # ragged along axis 0 (z and w)
    ((6, 5), (5, 1), (3, 2), ["TL114"] * 2),        # ragged along axis 1
])
def test_fast_paths_keep_self_overlap_and_ragged(shape, strides, tile, want):
    """Views chosen around each fast path: the 1-D test, the 2-D test, the grid built without
    a list of ragged axes: overlapping views are still TL123, ordinary ones pass, ragged
    partitions are still TL114."""
    z = _arr("z", "mut", BASE, shape, strides, tid=1, tile=tile)
    if len(shape) == 1:
        kdef, args = ADD, [z, _arr("x", "shared", BASE + 2**20, shape, tid=2),
                           _arr("y", "shared", BASE + 2**21, shape, tid=3)]
    else:
        kdef, args = GRID2, [z, _arr("w", "mut", BASE + 2**22, shape, tid=4, tile=tile)]
    codes = [d.code for d in check_launch(kdef, args, Span("p.py", 1, 0))]
    assert sorted(codes) == want


@pytest.mark.parametrize("tile_w,want", [((3, 2), []), ((2, 2), ["TL119"]), ((3, 4), ["TL119"])])
def test_grid_of_the_second_output_still_compared(tile_w, want):
    """Two outputs whose partitions differ in grid are TL119, along either axis."""
    args = [_arr("z", "mut", BASE, (6, 4), tid=1, tile=(3, 2)),
            _arr("w", "mut", BASE + 2**22, (6, 4), tid=4, tile=tile_w)]
    codes = [d.code for d in check_launch(GRID2, args, Span("p.py", 1, 0))]
    assert [c for c in codes if c != "TL111"] == want


def test_ragged_one_dimensional_partition_still_reported():
    """The 1-D grid fast path: a tile that does not divide the length is TL114."""
    n = 1000
    args = [_arr("z", "mut", BASE, (n,), tid=1, tile=(64,)),
            _arr("x", "shared", BASE + 2**20, (n,), tid=2),
            _arr("y", "shared", BASE + 2**21, (n,), tid=3)]
    assert [d.code for d in check_launch(ADD, args, Span("p.py", 1, 0))] == ["TL114"]
