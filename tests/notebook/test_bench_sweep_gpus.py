"""The CPU-side pieces of ``benchmarks/bench_sweep_gpus.py`` (the GPU runs cannot happen here):
the order of its runs and what each pays, its summary and ratios, the files it writes and
``--analyse`` reading them back, on tables recorded on two H200s with made-up wall times."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

import pandas as pd
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from benchmarks import bench_sweep_gpus as bench  # noqa: E402

RECORDED = os.path.join(ROOT, "benchmarks", "results", "sweep-gpus-nvidia-h200.csv")


@pytest.fixture(scope="module")
def recorded():
    """A recorded run's first one-GPU table (32 GEMM configurations) as every run's table, by
    GPU count (None: the in-process sweep's): their choices agree by construction (a new
    recording, whatever its own noise, does not change what these tests expect)."""
    df = pd.read_csv(RECORDED)
    first = df[df["run"] == df["run"][df["run"].str.contains(" 1 GPU")].iloc[0]]
    table = first.drop(columns="run").reset_index(drop=True)
    assert len(table) == 32 and table["ok"].all()
    return {None: table, 1: table, 2: table}


def _slower_best(df):
    """``df`` with its fastest configuration at every size made twice as slow."""
    df = df.copy()
    for size, ((bm, bn, bk), *_rest) in bench.ranking(df).items():
        at = (df["size"] == size) & (df["BM"] == bm) & (df["BN"] == bn) & (df["BK"] == bk)
        df.loc[at, "median_us"] *= 2
    return df


class FakeSweeps:
    """``run`` and ``close_pools`` for ``measure``: a session's kept pools, as the sweep keeps
    them, with a made-up wall time ``F + W / g`` (F: the start a run pays)."""
    W, LOCAL = 3.9, 4.0

    def __init__(self, recorded):
        self.recorded = recorded
        self.kept: set[int] = set()
        self.calls: list[tuple] = []
        self.closes = 0

    def close_pools(self):
        self.kept.clear()
        self.closes += 1

    def run(self, g, keep_pool):
        if g is None:
            self.calls.append(("here", None, self.closes))
            t = self.LOCAL
        else:
            first = not keep_pool or g not in self.kept
            if keep_pool:
                self.kept.add(g)
            self.calls.append(("pool", g, keep_pool, first, self.closes))
            t = (1.0 if first else 0.05) + self.W / g
        return t, self.recorded[g], {} if g is None else {i: {"warm_s": 0.5} for i in range(g)}


def _opts(**extra):
    return argparse.Namespace(**{"first_in_session": False, "no_warm_up": False,
                                 "uncompiled": False, **extra})


def test_the_runs_alternate_and_each_first_gpus_sweep_starts_its_pool(recorded):
    fake = FakeSweeps(recorded)
    runs = bench.measure(fake.run, fake.close_pools, 2, _opts())
    kinds = [(k, g) for k, g, *_ in runs]
    assert kinds == [("in-process first", 1),
                     ("in-process", 1), ("kept first", 1), ("kept again", 1),
                     ("kept first", 2), ("kept again", 2),
                     ("in-process", 1), ("kept first", 2), ("kept again", 2),
                     ("kept first", 1), ("kept again", 1),
                     ("one-shot", 1), ("one-shot", 2), ("one-shot", 2), ("one-shot", 1)]
    pools = [c for c in fake.calls if c[0] == "pool"]
    # a kept pool's first sweep found no pool (closed just before), the next one reused it
    assert [c[3] for c in pools if c[2]] == [True, False] * 4
    assert [c[2] for c in pools] == [True] * 8 + [False] * 4     # one-shot: keep_pool=False


def test_the_optional_kinds_run_inside_their_preparation(recorded):
    fake, entered = FakeSweeps(recorded), []

    def prepared(name):
        @contextlib.contextmanager
        def cm():
            entered.append((name, len(fake.calls)))
            yield
        return cm
    runs = bench.measure(fake.run, fake.close_pools, 2,
                         _opts(first_in_session=True, no_warm_up=True, uncompiled=True),
                         prepared("server"), prepared("no warm-up"), prepared("cache"))
    extra = [(k, g) for k, g, *_ in runs][15:]
    assert extra == [("first in session", 1), ("first in session", 2)] + \
        [(k, g) for k in ("no warm-up", "uncompiled") for g in (1, 2, 2, 1)]
    # each optional run is prepared right before it: the call count when entered is its index
    assert entered == [(name, 15 + i) for i, name in enumerate(
        ["server"] * 2 + ["no warm-up"] * 4 + ["cache"] * 4)]


def test_summary_ratios_files_and_analyse(recorded, tmp_path, capsys):
    fake = FakeSweeps(recorded)
    runs = bench.measure(fake.run, fake.close_pools, 2, _opts())
    runs.append(("warm-up", 2, 0.6, None, {0: {"warm_s": 0.6}, 1: {"warm_s": 0.62}}))
    ratios, records = bench.summarise(runs, 2)
    W, local = FakeSweeps.W, FakeSweeps.LOCAL
    again = ratios["kept again"]
    assert again["seconds_one_gpu"] == pytest.approx(0.05 + W)
    assert again["speedup_vs_one_worker"] == pytest.approx((0.05 + W) / (0.05 + W / 2))
    assert again["speedup_vs_in_process"] == pytest.approx(local / (0.05 + W / 2))
    assert ratios["kept first"]["speedup"] == pytest.approx((1 + W) / (1 + W / 2))
    assert "speedup" not in ratios["warm-up"] and "seconds_all_gpus" in ratios["warm-up"]
    assert ratios["in-process"] == {"seconds_one_gpu": local}
    # the same choices everywhere
    assert ratios["kept again vs in-process"]["same_within_noise"] is True
    assert ratios["kept again"]["same_within_noise"] is True
    assert "same_best" in ratios["kept again"] and "in-process vs in-process" not in ratios
    assert len(records) == len(runs) and records[-1]["warm_up"]["1"] == {"warm_s": 0.62}
    assert "worker_s" in records[2] and records[2]["all_ok"] is True
    bench.print_summary(runs, ratios, 2)
    out = capsys.readouterr().out
    assert "kept again       median 1 GPU" in out and "vs in-process" in out
    js, csv = bench.write_results(str(tmp_path), runs, ratios, records, 2, {"repeats": 50})
    assert os.path.basename(js) == "sweep-gpus-nvidia-h200.json"
    saved = json.load(open(js))
    assert saved["summary"]["kept again"]["speedup_vs_in_process"] == \
        pytest.approx(again["speedup_vs_in_process"]) and saved["repeats"] == 50
    assert len(pd.read_csv(csv)) == 32 * sum(r[3] is not None for r in runs)
    assert bench.main(["--analyse", csv]) == 0
    out = capsys.readouterr().out
    assert "kept again vs in-process: same best" in out and "in-process first 1 GPU(s) #0" in out


def test_an_in_process_sweep_that_chose_otherwise_is_told(recorded):
    fake = FakeSweeps({**recorded, None: _slower_best(recorded[1])})
    ratios, _ = bench.summarise(bench.measure(fake.run, fake.close_pools, 2, _opts()), 2)
    assert ratios["kept again vs in-process"] == {"same_best": False,
                                                  "same_within_noise": False}
    assert ratios["kept again"]["same_within_noise"] is True      # 1 and 2 GPUs still agree


def test_help_and_no_gpu(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--help"])
    assert e.value.code == 0 and "--analyse" in capsys.readouterr().out
    from cutile_lab.performance.timing import gpu_status
    if gpu_status()[0]:
        pytest.skip("a GPU is here")
    assert bench.main(["--out", os.devnull]) == 0
    assert "needs a GPU" in capsys.readouterr().out


def test_the_sweeps_it_makes_pass_the_sweeps_own_checks():
    """The benchmark's compile-only sweeps (no make_args) and its timed ones name only what
    ``sweep`` accepts: on the first 2-GPU run the compile-only one still passed the problem
    size, which only make_args takes, and stopped before timing anything."""
    import cutile_lab as cl
    from cutile_lab.errors import LaunchError
    from cutile_lab.notebook.tuning import check_choices
    kernel = cl.kernels_from_source(bench.GEMM, "bench_sweep_gpus.py")["gemm"]
    check_choices(kernel, None, bench.COMPILE_CHOICES)
    check_choices(kernel, bench.make_args, bench.CHOICES)
    with pytest.raises(LaunchError):
        check_choices(kernel, None, bench.CHOICES)
