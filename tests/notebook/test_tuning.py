"""``sweep`` and ``explore`` over const generics."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from cutile_lab.errors import LanguageError, LaunchError
from cutile_lab.notebook import sweep
from cutile_lab.notebook.fanout import compile_config
from cutile_lab.notebook.tuning import _largest_first, configurations, progress_bar

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''


@pytest.fixture
def add(shell):
    cell = shell.run("%%tilekernel\n" + ADD)
    assert cell.ok, cell.error
    return shell.ns["add"]


def test_configurations_order():
    assert configurations({"B": [64, 128], "N": [10]}) == [{"B": 64, "N": 10},
                                                          {"B": 128, "N": 10}]
    assert configurations({"B": 64}) == [{"B": 64}]


def test_compile_config_reports_errors_as_data(add):
    src = add.source
    ok = compile_config(src.text, src.filename, 0, "add", "sm_90", {"B": 64}, {}, {}, True)
    assert ok["ok"] and ok["registers"] > 0 and ok["compile_s"] > 0
    bad = compile_config(src.text, src.filename, 0, "add", "sm_90", {"B": 100}, {}, {}, True)
    assert not bad["ok"] and "power of two" in bad["error"] and bad["error"].startswith("line 2")


def test_sweep_thread_pool(add, capsys):
    with ThreadPoolExecutor(2) as ex:
        df = sweep(add, None, executor=ex, B=[64, 128, 100])
    assert list(df.columns[:9]) == ["B", "registers", "shared_bytes", "compile_s", "median_us",
                                    "gbps", "tflops", "pct_of_roof", "ok"]
    assert list(df["B"]) == [64, 128, 100]
    assert list(df["ok"]) == [True, True, False]
    assert (df["registers"][:2] > 0).all()
    assert "power of two" in df["error"][2]
    assert "compiling add" in capsys.readouterr().err       # the text progress line


def test_sweep_default_process_pool(add):
    df = sweep(add, None, progress=False, B=[64, 256])
    assert list(df["ok"]) == [True, True]
    assert (df["compile_s"] > 0).all() and (df["registers"] > 0).all()


def test_sweep_needs_choices(add):
    with pytest.raises(LaunchError, match="no choices") as e:
        sweep(add, None)
    assert "sweep(add, make_args, B=[64, 128])" in e.value.help


@pytest.mark.parametrize("kernel, make_args, choices, error, words", [
    # a pandas KeyError, an AttributeError and a silent row of nothing before
    ("add", None, {"B": []}, LaunchError, ["B=[]", "no values"]),
    ("add", None, {"Q": [1, 2]}, LaunchError, ["`Q` is not a const generic of `add`"]),
    ("add", lambda B, n: (), {"B": [64], "Q": [1]}, LaunchError, ["nor a keyword of `make_args`"]),
    ("lambda", None, {"B": [64]}, LanguageError, ["not a kernel"]),
])
def test_sweep_refuses_bad_choices_before_compiling(add, kernel, make_args, choices, error,
                                                    words):
    with pytest.raises(error) as e:
        sweep(add if kernel == "add" else (lambda: 0), make_args, progress=False, **choices)
    for w in words:
        assert w in e.value.message
    assert e.value.help


def test_sweep_keeps_an_executor_that_refuses_work_to_its_rows(add):
    """A ``submit`` that raised ended the sweep from inside it, and lost the other rows."""
    class Refuses(ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            if kwargs["consts"]["B"] == 128:
                raise RuntimeError("worker pool is shutting down")
            return super().submit(fn, *args, **kwargs)

    with Refuses(1) as ex:
        df = sweep(add, None, executor=ex, progress=False, use_cache=False, B=[64, 128])
    assert list(df["ok"]) == [True, False]
    assert "executor failed: RuntimeError: worker pool is shutting down" in df["error"][1]


def test_progress_text(capsys):
    import io
    buf = io.StringIO()
    with progress_bar(4, "compiling", file=buf) as p:     # tqdm.auto: text outside a notebook
        for _ in range(4):
            p.update()
    assert "compiling" in buf.getvalue() and "4/4" in buf.getvalue()
    assert buf.getvalue().endswith("\n")
    quiet = io.StringIO()
    with progress_bar(4, "compiling", enabled=False, file=quiet) as p:
        p.update(4)
    assert quiet.getvalue() == ""


# --- running configurations: the simulator when there is no GPU ----------------------------

@pytest.fixture
def sim_session():
    import cutile_lab as cl
    from cutile_lab.performance.timing import gpu_status
    if gpu_status()[0]:
        pytest.skip("checks the no-GPU path (GPU timings are in test_gpu.py)")
    cl.set_backend("sim")
    yield cl
    cl.set_backend(None)


def _make_args(cl, n=3000):
    import numpy as np
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)

    def make_args(B, **_):
        z = np.zeros(n, np.float32)
        return cl.asarray(z).partition(B), cl.asarray(x), cl.asarray(y)

    def check(result):
        zp, xx, yy = result
        return np.allclose(zp.unpartition().to_numpy(), x + y)
    return make_args, check


def test_sweep_runs_each_configuration_in_the_simulator(add, sim_session):
    make_args, check = _make_args(sim_session)
    with ThreadPoolExecutor(2) as ex:
        df = sweep(add, make_args, executor=ex, progress=False, check=check, B=[128, 512])
    assert list(df["ok"]) == [True, True] and list(df["checked"]) == [True, True]
    assert df["median_us"].isna().all() and (df["sim_ms"] > 0).all()


def test_sweep_reports_a_wrong_result(add, sim_session):
    make_args, _ = _make_args(sim_session)
    with ThreadPoolExecutor(2) as ex:
        df = sweep(add, make_args, executor=ex, progress=False, check=lambda r: False,
                   B=[128])
    assert list(df["ok"]) == [False] and df["error"][0] == "wrong result"


def test_explore_widget(add, sim_session):
    import ipywidgets as w
    from cutile_lab.notebook import explore
    make_args, check = _make_args(sim_session)
    ex = explore(add, make_args, check=check, B=[64, 128, 256, 512, 1024], N=[1, 2])
    assert isinstance(ex.controls["B"], w.SelectionSlider)    # many numbers: a slider
    assert isinstance(ex.controls["N"], w.Dropdown)
    assert len(ex.rows) == 1 and ex.rows[0]["B"] == 64 and ex.rows[0]["ok"]
    ex.controls["B"].value = 256                               # a change re-runs
    ex.controls["N"].value = 2
    h = ex.history
    assert list(h["B"]) == [64, 256, 256] and list(h["N"]) == [1, 1, 2]
    assert h["ok"].all() and h["checked"].all() and (h["registers"] > 0).all()
    assert len(ex.table.outputs) == 1 and len(ex.plot.outputs) == 1   # the views refreshed
    assert "image/png" in ex.plot.outputs[0]["data"]
    assert isinstance(ex.widget, w.VBox)
    row = ex.run(B=100, N=1)                                   # a compile error: reported
    assert not row["ok"] and "power of two" in row["error"]
    assert "power of two" in ex.status.value


def test_a_sweep_run_again_takes_its_compiles_from_the_cache_without_workers(add):
    from concurrent.futures import ThreadPoolExecutor

    class Refusing(ThreadPoolExecutor):
        def submit(self, *a, **k):
            raise AssertionError("every compile is cached: no worker should be asked")
    with ThreadPoolExecutor(2) as ex:
        first = sweep(add, None, executor=ex, progress=False, B=[64, 128])
    with Refusing(1) as ex:
        again = sweep(add, None, executor=ex, progress=False, B=[64, 128])
    assert list(again["ok"]) == [True, True]
    assert list(again["registers"]) == list(first["registers"])


def test_workers_get_the_largest_problems_first_and_the_table_keeps_its_order():
    configs = configurations(dict(B=[256, 64], size=[300, 8192, 1000], dtype=["f16"]))
    order = _largest_first(list(range(len(configs))), configs, {"B"})
    sizes = [configs[i]["size"] for i in order]
    assert sizes == sorted(sizes, reverse=True)           # tile sizes do not count as work
    assert sorted(order) == list(range(len(configs)))      # every configuration, once
    # the const generic B is no problem size: equal sizes keep the order of the choices
    assert [configs[i]["B"] for i in order[:2]] == [256, 64]
