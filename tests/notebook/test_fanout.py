"""A sweep spread over workers: a pool of per-GPU processes and a real ``dask.distributed``
cluster (processes, CPU only here: the workers run the simulator). The distributed sweep's table
must equal the local one's; a worker killed mid-sweep loses no configuration."""
from __future__ import annotations

import os

import numpy as np
import pytest

from cutile_lab.notebook import sweep
from cutile_lab.notebook.fanout import (GPUPool, KernelSpec, pack, run_configuration,
                                        spawnable_main)

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''

# 4 tile sizes x 6 problem sizes: 24 configurations
CHOICES = dict(B=[32, 64, 128, 256], n=[100, 300, 777, 1000, 2048, 5000])
# columns that depend on when or where a row ran, not on what it computed
TIMED = ["compile_s", "sim_ms", "worker", "worker_s", "cache"]


@pytest.fixture
def add(shell):
    cell = shell.run("%%tilekernel\n" + ADD)
    assert cell.ok, cell.error
    return shell.ns["add"]


@pytest.fixture
def sim_only(monkeypatch):
    from cutile_lab.performance.timing import gpu_status
    if gpu_status()[0]:
        pytest.skip("the no-GPU path (the GPU sweep is benchmarks/bench_sweep_gpus.py)")
    # spawned workers inherit the environment: they run the simulator too
    monkeypatch.setenv("CUTILE_LAB_BACKEND", "sim")


def _make(seed_dir=None, kill_at=None):
    """make_args/check as a notebook would write them: closures (they travel by value). With
    ``kill_at``, the worker running that configuration dies the first time it does."""
    def make_args(B, n):
        import cutile_lab as cl
        if kill_at == (B, n):
            marker = os.path.join(seed_dir, f"killed-{B}-{n}")
            if not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)             # the worker process dies mid-sweep
        rng = np.random.default_rng()
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        return cl.asarray(np.zeros(n, np.float32)).partition(B), cl.asarray(x), cl.asarray(y)

    def check(result, args):
        zp, x, y = result
        return np.allclose(zp.unpartition().to_numpy(), x.to_numpy() + y.to_numpy())
    return make_args, check


def _same_table(a, b) -> None:
    cols = [c for c in a.columns if c not in TIMED]
    assert cols == [c for c in b.columns if c not in TIMED]
    left = a[cols].reset_index(drop=True)
    right = b[cols].reset_index(drop=True)
    assert left.equals(right), f"\n{left}\n!=\n{right}"


def test_worker_run_is_plain_data(add, sim_only):
    make_args, check = _make()
    spec = KernelSpec.of(add, {})
    row = run_configuration(spec, {"B": 64, "n": 500}, pack(make_args, check, None), 3, 1)
    assert row["checked"] is True and row["device"] == "simulator" and row["gpu"] is None
    assert row["sim_ms"] > 0 and "error" not in row


def test_gpu_pool_sweep_equals_local_and_survives_a_dead_worker(add, sim_only, tmp_path):
    make_args, check = _make(str(tmp_path), kill_at=(64, 777))
    local = sweep(add, *_make()[:1], progress=False, check=_make()[1], **CHOICES)
    with GPUPool([0, 1], allow_simulator=True) as pool:
        spread = sweep(add, make_args, progress=False, check=check, gpus=pool, **CHOICES)
        assert pool.restarts == 1                     # the dead worker was replaced
    assert (tmp_path / "killed-64-777").exists()      # ...after dying mid-sweep
    assert len(spread) == 24 and spread["ok"].all() and spread["checked"].all()
    _same_table(local, spread)


def test_a_pool_warms_its_workers_while_the_configurations_compile(add, sim_only, monkeypatch):
    from cutile_lab.notebook import tuning
    compile_all, warming = tuning._compile_all, []

    def watched(*args, **kwargs):          # what the pool is doing when the compiles start
        warming.append(len(pool._warming))
        return compile_all(*args, **kwargs)
    monkeypatch.setattr(tuning, "_compile_all", watched)
    make_args, check = _make()
    choices = dict(B=[64, 128], n=[300, int(np.random.default_rng().integers(400, 900))])
    with GPUPool([0, 1], allow_simulator=True) as pool:
        first = sweep(add, make_args, progress=False, check=check, gpus=pool, **choices)
        warm = pool.warmups
        again = sweep(add, make_args, progress=False, check=check, gpus=pool, **choices)
        assert pool.warmups == warm                   # a kept pool warms once
        from cutile_lab.notebook.gpu_pools import kept_pools
        assert kept_pools() == {}                     # the user's pool is not the session's
    assert warming == [2, 2]
    assert set(warm) == {0, 1}
    for w in warm.values():
        assert "error" not in w and w["device"] == "simulator" and w["warm_s"] > 0
    # every configuration ran on a warmed worker, the second sweep on the same ones
    workers = {w["worker"] for w in warm.values()}
    assert set(first["worker"]) <= workers and set(again["worker"]) <= workers
    assert first["ok"].all() and again["ok"].all()


def test_gpu_pool_reports_a_configuration_that_kills_every_worker(add, sim_only):
    def make_args(B, n):
        if B == 128:
            os._exit(3)
        import cutile_lab as cl
        return (cl.asarray(np.zeros(n, np.float32)).partition(B),
                cl.asarray(np.ones(n, np.float32)), cl.asarray(np.ones(n, np.float32)))
    with GPUPool([0], allow_simulator=True) as pool:
        df = sweep(add, make_args, progress=False, gpus=pool, B=[64, 128, 256], n=[300])
    assert list(df["ok"]) == [True, False, True]
    assert "died twice" in df["error"][1]


def test_dask_cluster_sweep_equals_local_and_loses_no_configuration(add, sim_only, tmp_path):
    distributed = pytest.importorskip("distributed")
    make_args, check = _make(str(tmp_path), kill_at=(128, 1000))
    local = sweep(add, *_make()[:1], progress=False, check=_make()[1], **CHOICES)
    # (the test's IPython shell has replaced __main__, as a notebook's kernel does)
    with spawnable_main(), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        spread = sweep(add, make_args, executor=client, progress=False, check=check,
                       **CHOICES)
    assert (tmp_path / "killed-128-1000").exists()    # a worker died mid-sweep
    assert len(spread) == 24 and spread["ok"].all() and spread["checked"].all()
    # compiled on the cluster's workers (not this process), run there too
    assert {int(w.rsplit(":", 1)[1]) for w in spread["worker"]} - {os.getpid()}
    _same_table(local, spread)


def test_gpu_pool_needs_gpus_unless_simulating(monkeypatch):
    from cutile_lab.errors import NoDeviceError
    from cutile_lab.notebook import fanout
    monkeypatch.setattr(fanout, "local_gpu_count", lambda: 0)
    with pytest.raises(NoDeviceError, match="no GPU"):
        GPUPool()
    monkeypatch.setattr(fanout, "local_gpu_count", lambda: 1)
    with pytest.raises(NoDeviceError, match="there is no GPU 3"):
        GPUPool([3])


@pytest.mark.parametrize("gpus", ["x", "0,1", -1, 0, 2.5, True, [0, -1], [1, 1], ["a"],
                                  [True], b"01"])
def test_gpus_that_name_no_gpus_are_the_labs_error(gpus):
    """Were int()'s ValueError or a TypeError inside the pool, an empty pool ('no GPU') for a
    count below 1, or a pool pinned to GPU -1."""
    from cutile_lab.errors import LaunchError
    with pytest.raises(LaunchError, match="does not name GPUs") as e:
        GPUPool(gpus, allow_simulator=True)
    assert e.value.span.filename == __file__ and '"all"' in e.value.help
    n = int(np.random.default_rng().integers(1, 4))
    assert GPUPool(n, allow_simulator=True).gpus == list(range(n))
    assert GPUPool(iter([2, 0]), allow_simulator=True).gpus == [2, 0]


@pytest.mark.gpu
def test_gpu_pool_times_on_each_gpu_with_its_baseline(add):
    torch = pytest.importorskip("torch")
    from cutile_lab.notebook.fanout import local_gpu_count
    n_gpus = local_gpu_count()
    if n_gpus < 1:
        pytest.skip("no GPU")

    def make_args(B, n):
        import cutile_lab as cl
        x = cl.asarray(torch.randn(n, device="cuda"))
        y = cl.asarray(torch.randn(n, device="cuda"))
        return cl.asarray(torch.empty(n, device="cuda")).partition(B), x, y

    def baseline(B, n):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        return lambda: torch.add(x, y)

    def check(result, args):
        zp, x, y = result
        return torch.allclose(torch.as_tensor(zp.unpartition()), torch.as_tensor(x)
                              + torch.as_tensor(y))
    with GPUPool("all") as pool:
        df = sweep(add, make_args, progress=False, check=check, baseline=baseline, gpus=pool,
                   repeats=5, B=[256, 512], n=[1 << 20, 1 << 22])
        warm = pool.warmups
    assert df["ok"].all(), df.get("error")
    # each worker warmed up (GPU context, PyTorch and cuBLAS: make_args names torch) before
    # its first configuration, and ran its configurations
    assert set(warm) == set(range(n_gpus))
    for g, w in warm.items():
        assert "error" not in w and w["gpu"] == g and w["torch_cuda_s"] > 0, w
    assert set(df["worker"]) <= {w["worker"] for w in warm.values()}
    assert set(df["gpu"]) <= set(range(n_gpus))
    assert (df["median_us"] > 0).all() and (df["baseline_us"] > 0).all()
    assert (df["speedup"] > 0).all() and df["device"].str.len().min() > 0


# --- the session's kept pools (sweep(..., gpus=[...]) without a pool of the user's) -------------

@pytest.fixture
def kept(monkeypatch):
    """Two GPUs as far as a pool is concerned (its workers run the simulator: ``sim_only``), and
    no kept pool before or after the test."""
    from cutile_lab.notebook import fanout, gpu_pools
    monkeypatch.setattr(fanout, "local_gpu_count", lambda: 2)
    assert gpu_pools.kept_pools() == {}
    yield gpu_pools
    gpu_pools.close_gpu_pools()


def _pids(df) -> set[int]:
    return {int(w.rsplit(":", 1)[1]) for w in df["worker"]}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _until_gone(pids) -> list[int]:
    """The pids still alive after waiting (a bound, not a measurement) for them to exit."""
    import time
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def test_gpus_sweeps_reuse_the_sessions_workers_until_closed(add, sim_only, kept):
    import cutile_lab as cl
    make_args, check = _make()
    n = int(np.random.default_rng().integers(400, 900))
    choices = dict(B=[32, 64, 128, 256], n=[100, n, 2048, 5000])    # 16 configurations
    local = sweep(add, make_args, progress=False, check=check, **choices)
    first = sweep(add, make_args, progress=False, check=check, gpus=[0, 1], **choices)
    pool = kept.kept_pools()[(0, 1)]
    pids = pool.pids
    assert set(pids) == {0, 1} and all(_alive(p) for p in pids.values())
    assert _pids(first) <= set(pids.values())
    again = sweep(add, make_args, progress=False, check=check, gpus=2, **choices)  # same GPUs
    assert kept.kept_pools() == {(0, 1): pool} and pool.pids == pids and pool.restarts == 0
    assert _pids(again) <= set(pids.values())
    _same_table(local, first)
    _same_table(first, again)
    # another set of GPUs has a pool of its own
    other = sweep(add, make_args, progress=False, check=check, gpus=[1], B=[64], n=[n])
    pools = kept.kept_pools()
    assert set(pools) == {(0, 1), (1,)} and pools[(1,)] is not pool
    assert _pids(other) == set(pools[(1,)].pids.values()) and not _pids(other) & set(pids.values())
    everything = set(pids.values()) | _pids(other)
    # closing ends every kept worker; the next sweep starts fresh ones
    assert cl.close_gpu_pools() == 2 and kept.kept_pools() == {}
    assert [p for p in everything if _alive(p)] == []          # shutdown waited for them
    later = sweep(add, make_args, progress=False, check=check, gpus=[0, 1], **choices)
    assert not _pids(later) & everything and kept.kept_pools()[(0, 1)] is not pool
    _same_table(local, later)


def test_a_kept_worker_that_died_is_replaced_before_the_next_sweep(add, sim_only, kept):
    import signal
    make_args, check = _make()
    local = sweep(add, make_args, progress=False, check=check, **CHOICES)
    sweep(add, make_args, progress=False, check=check, gpus=[0, 1], B=[64], n=[300, 500])
    pool = kept.kept_pools()[(0, 1)]
    pids = pool.pids
    victim = int(np.random.default_rng().integers(0, 2))
    os.kill(pids[victim], signal.SIGKILL)
    assert _until_gone([pids[victim]]) == []
    assert kept.kept_pool([0, 1]) is pool                # handed out repaired, not broken
    assert pool.restarts == 1 and set(pool.pids) == {1 - victim}
    spread = sweep(add, make_args, progress=False, check=check, gpus=[0, 1], **CHOICES)
    assert pool.restarts == 1 and set(pool.pids) == {0, 1}
    assert pool.pids[1 - victim] == pids[1 - victim] and pool.pids[victim] != pids[victim]
    assert set(pool.warmups) == {0, 1}                    # the new worker warmed up too
    assert len(spread) == 24 and spread["ok"].all() and spread["checked"].all()
    _same_table(local, spread)


def test_keep_pool_false_gives_the_sweep_a_pool_of_its_own(add, sim_only, kept, monkeypatch):
    from cutile_lab.notebook import fanout
    shutdowns, shutdown = [], fanout.GPUPool.shutdown

    def watched(self, wait=True):
        shutdowns.append((self, wait))
        shutdown(self, wait)
    monkeypatch.setattr(fanout.GPUPool, "shutdown", watched)
    make_args, check = _make()
    df = sweep(add, make_args, progress=False, check=check, gpus=[0, 1], keep_pool=False,
               B=[64, 128], n=[300, 700])
    assert df["ok"].all() and kept.kept_pools() == {}
    assert [(type(p), w) for p, w in shutdowns] == [(fanout.GPUPool, False)]  # no wait for exit
    assert _until_gone(_pids(df)) == []             # ...yet its workers do end
    assert shutdowns[0][0].pids == {}


def test_kept_pools_close_at_exit_registered_once(kept, monkeypatch):
    registered = []
    monkeypatch.setattr(kept, "_AT_EXIT", False)
    monkeypatch.setattr(kept.atexit, "register", lambda fn, **kw: registered.append((fn, kw)))
    a = kept.kept_pool([0])
    assert kept.kept_pool("all") is not a and kept.kept_pool([0]) is a
    assert kept.kept_pool([1, 0]) is kept.kept_pool(2) is kept.kept_pool("all")  # the same GPUs
    assert registered == [(kept.close_gpu_pools, {"wait": False})]
    assert set(kept.kept_pools()) == {(0,), (0, 1)}
    fn, kw = registered[0]
    assert fn(**kw) == 2 and kept.kept_pools() == {}


def test_the_interpreter_exits_with_kept_workers_and_ends_them(add, sim_only, tmp_path):
    import subprocess
    import sys
    script = tmp_path / "kept.py"
    script.write_text(f'''
import numpy as np
import cutile_lab as cl
from cutile_lab.notebook import fanout, sweep
fanout.local_gpu_count = lambda: 2
add = cl.kernels_from_source({ADD!r}, "kept.py")["add"]
def make_args(B, n):
    import cutile_lab as cl
    return cl.asarray(np.zeros(n, np.float32)).partition(B), cl.asarray(np.ones(n, np.float32)), \\
        cl.asarray(np.ones(n, np.float32))
if __name__ == "__main__":        # (its workers import this file again)
    df = sweep(add, make_args, progress=False, gpus=[0, 1], B=[64, 128], n=[300])
    assert df["ok"].all()
    print(*sorted(int(w.rsplit(":", 1)[1]) for w in df["worker"]))
''')
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    pids = [int(p) for p in out.stdout.split()]
    assert pids and _until_gone(pids) == []


@pytest.mark.gpu
def test_gpus_all_keeps_its_workers_on_the_gpus(add):
    torch = pytest.importorskip("torch")
    import cutile_lab as cl
    from cutile_lab.notebook.fanout import local_gpu_count
    from cutile_lab.notebook.gpu_pools import kept_pools
    if local_gpu_count() < 1:
        pytest.skip("no GPU")

    def make_args(B, n):
        import cutile_lab as cl
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        return cl.asarray(torch.empty(n, device="cuda")).partition(B), cl.asarray(x), \
            cl.asarray(y)

    def check(result, args):
        zp, x, y = result
        return torch.allclose(torch.as_tensor(zp.unpartition()), torch.as_tensor(x)
                              + torch.as_tensor(y))
    cl.close_gpu_pools()
    try:
        first = sweep(add, make_args, progress=False, check=check, gpus="all", repeats=5,
                      B=[256, 512], n=[1 << 20, 1 << 22])
        (pool,) = kept_pools().values()
        pids = pool.pids
        again = sweep(add, make_args, progress=False, check=check, gpus="all", repeats=5,
                      B=[256, 512], n=[1 << 20, 1 << 22])
        assert pool.pids == pids and pool.restarts == 0
        assert first["ok"].all() and again["ok"].all(), again.get("error")
        assert _pids(again) <= set(pids.values()) and set(again["gpu"]) <= set(pids)
    finally:
        assert cl.close_gpu_pools() == 1
    assert _until_gone(list(pids.values())) == []
