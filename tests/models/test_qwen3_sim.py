"""Qwen3 decode from the library's kernels on the simulator, against the NumPy reference of the
same architecture with the same (fresh random) weights; checkpoint loading; the kernels' safety."""
import json

import ml_dtypes
import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.errors import LaunchError
from cutile_lab.models import reference
from cutile_lab.models.qwen3 import Qwen3
from cutile_lab.models.qwen3_config import Qwen3Config, load_checkpoint, random_weights

RNG = np.random.default_rng()


@pytest.fixture(autouse=True)
def sim():
    cl.set_backend("sim")
    yield
    cl.set_backend(None)


def tiny(tied=False):
    return Qwen3Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                       head_dim=16, tie_word_embeddings=tied, name="tiny")


def _varied_weights(config, prompt, n):
    """Fresh random weights whose greedy continuation is not one repeated token (a test that a
    stuck decode could pass is no test)."""
    for _ in range(20):
        w = random_weights(config, seed=int(RNG.integers(1 << 31)))
        ref = reference.greedy(config, w, prompt, n)
        if len(set(ref)) >= 4:
            return w, ref
    pytest.fail("no random weights with a varied greedy continuation in 20 draws")


def test_greedy_32_steps_and_logits_match_the_reference_through_the_graph():
    config = tiny()
    prompt = [int(t) for t in RNG.integers(0, config.vocab_size, 3)]
    weights, ref_tokens = _varied_weights(config, prompt, 32)
    model = Qwen3(config, weights, dtype="f32", max_seq=40, chunk=8)
    graph = model.graph()
    assert graph.num_kernels == 0 or graph.num_kernels == len(model.launches)
    logits = []
    tokens = model.generate(prompt, 32, logits=logits)
    assert tokens[0].tolist() == ref_tokens
    ref = reference.logits(config, weights, prompt + ref_tokens[:-1])
    got = np.concatenate(logits, axis=0)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_batch_of_two_tied_bf16_and_the_unsafe_append_agree():
    config = tiny(tied=True)
    weights = random_weights(config, seed=int(RNG.integers(1 << 31)))
    prompts = [[int(t) for t in RNG.integers(0, 128, 4)] for _ in range(2)]
    model = Qwen3(config, weights, dtype="f32", batch=2, max_seq=16, chunk=4)
    logits = []
    tokens = model.generate(prompts, 3, logits=logits)
    for b in range(2):
        assert tokens[b].tolist() == reference.greedy(config, weights, prompts[b], 3)
        ref = reference.logits(config, weights, prompts[b] + tokens[b].tolist()[:-1])
        np.testing.assert_allclose(np.stack([lg[b] for lg in logits]), ref, rtol=1e-4,
                                   atol=1e-4 * np.abs(ref).max())
    unsafe = Qwen3(config, weights, dtype="f32", batch=2, max_seq=16, chunk=4,
                   unsafe_append=True)
    unsafe_logits = []
    assert (unsafe.generate(prompts, 3, logits=unsafe_logits) == tokens).all()
    np.testing.assert_allclose(np.stack(unsafe_logits), np.stack(logits), rtol=1e-6, atol=1e-6)
    # bf16: the same step in bf16 storage stays close to the float64 reference
    half = Qwen3(config, weights, dtype="bf16", batch=2, max_seq=16, chunk=4)
    half_logits = []
    half.generate(prompts, 1, logits=half_logits)
    ref = reference.logits(config, weights, prompts[0])[-1]
    assert np.abs(half_logits[-1][0] - ref).max() < 0.05 * np.abs(ref).max()


def test_kv_cache_holds_the_normed_rotated_keys():
    """The cache rows the attention kernel wrote are the reference's keys after q/k norm and
    RoPE (the position is a device value: the rows must land at their positions)."""
    config = tiny()
    weights = random_weights(config, seed=int(RNG.integers(1 << 31)))
    model = Qwen3(config, weights, dtype="f32", max_seq=16, chunk=8)
    prompt = [int(t) for t in RNG.integers(0, 128, 5)]
    model.reset(prompt)
    for _ in range(5):
        model.step()
    k0 = model.kcache[0].to_numpy()                          # (kv heads, seq, head_dim)
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    x = w["model.embed_tokens.weight"][prompt]
    a = reference._rms(x, w["model.layers.0.input_layernorm.weight"], config.rms_norm_eps)
    k = (a @ w["model.layers.0.self_attn.k_proj.weight"].T).reshape(5, 2, 16)
    k = reference._rms(k, w["model.layers.0.self_attn.k_norm.weight"], config.rms_norm_eps)
    k = reference._rope(k.transpose(1, 0, 2), np.arange(5.0), config.rope_theta)
    np.testing.assert_allclose(k0[:, :5], k, rtol=1e-4, atol=1e-5)
    assert int(model.pos.to_numpy()[0, 0]) == 5


def _write_checkpoint(folder, config, weights, shards):
    from safetensors.numpy import save_file
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config.to_dict()))
    names = sorted(weights)
    if shards == 1:
        save_file(weights, str(folder / "model.safetensors"))
        return
    weight_map = {}
    for i in range(shards):
        part = names[i::shards]
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({k: weights[k] for k in part}, str(folder / fname))
        weight_map.update({k: fname for k in part})
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}))


@pytest.mark.parametrize("shards", [1, 3])
def test_checkpoint_in_the_hugging_face_layout(tmp_path, shards):
    config = tiny()
    weights = {k: v.astype(ml_dtypes.bfloat16)
               for k, v in random_weights(config, seed=int(RNG.integers(1 << 31))).items()}
    _write_checkpoint(tmp_path / "ckpt", config, weights, shards)
    loaded_config, loaded = load_checkpoint(tmp_path / "ckpt")
    assert loaded_config.hidden_size == 64 and loaded_config.head_dim == 16
    assert not loaded_config.tie_word_embeddings
    for k, v in weights.items():
        assert loaded[k].dtype == v.dtype and (loaded[k] == v).all(), k
    model = Qwen3.from_checkpoint(tmp_path / "ckpt", dtype="bf16", max_seq=8, chunk=4)
    logits = []
    prompt = [int(t) for t in RNG.integers(0, 128, 2)]
    model.generate(prompt, 1, logits=logits)
    ref = reference.logits(config, weights, prompt)[-1]
    assert np.abs(logits[-1][0] - ref).max() < 0.05 * np.abs(ref).max()


def test_bad_inputs_are_located_errors(tmp_path):
    with pytest.raises(LaunchError, match="unknown Qwen3 configuration"):
        Qwen3Config.named("Qwen3-5B")
    with pytest.raises(LaunchError, match="no config.json"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(tiny().to_dict()))
    with pytest.raises(LaunchError, match="no model.safetensors"):
        load_checkpoint(tmp_path)
    weights = random_weights(tiny(), seed=1)
    del weights["model.norm.weight"]
    with pytest.raises(LaunchError, match="missing"):
        Qwen3(tiny(), weights, dtype="f32", max_seq=8, chunk=4)
    model = Qwen3(tiny(), random_weights(tiny(), seed=2), dtype="f32", max_seq=8, chunk=4)
    with pytest.raises(LaunchError, match="prompt of 9 tokens"):
        model.reset(list(range(9)))
    with pytest.raises(LaunchError, match="token ids"):
        model.reset([1, 500])
    with pytest.raises(LaunchError, match="do not fit a cache of 8"):
        model.generate([1, 2, 3], 7)


def test_named_configurations_have_the_published_shapes():
    c = Qwen3Config.named("Qwen3-4B")
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads,
            c.intermediate_size, c.vocab_size, c.head_dim, c.tie_word_embeddings) == \
        (2560, 36, 32, 8, 9728, 151936, 128, True)
    assert Qwen3Config.named("Qwen3-8B").tie_word_embeddings is False
    assert Qwen3Config.named("Qwen3-0.6B").hidden_size == 1024
    # ~4.0 billion parameters read per token (the tied head counted once, as the LM head)
    assert 7.9e9 < c.weight_bytes(2) < 8.2e9


def test_every_kernel_of_the_step_checks_clean_in_the_safe_subset():
    """No diagnostic, no `unsafe` block in the kernels of the default step; the one unsafe
    variant (the row-store cache append) has its block justified by a comment above it."""
    model = Qwen3(tiny(), random_weights(tiny(), seed=3), dtype="bf16", max_seq=8, chunk=4)
    from cutile_lab.kernels import decode as D
    kernels = {launch.kernel for launch in model.launches}
    assert len(kernels) == 8
    templates = [D.GEMV_RESIDUAL, D.RMS_GEMV, D.RMS_GEMV_SWIGLU, D.RMS_GEMV_ARGMAX, D.ARGMAX,
                 D.EMBED, D.COPY, D.ATTENTION_DECODE, D.ATTENTION_COMBINE]
    for t in templates:
        for dt in ("bf16", "f32"):
            k = t.kernel(dt=dt)
            assert k.check() == [], k.name
            assert "unsafe" not in k.source.text, k.name
    assert {t.kernel(dt="bf16").name for t in templates} >= kernels
    unsafe = D.ATTENTION_DECODE_UNSAFE.kernel(dt="bf16")
    # nothing but the note that names its block as unchecked (TL050)
    assert [d.code for d in unsafe.check()] == ["TL050"]
    lines = unsafe.source.text.splitlines()
    at = next(i for i, line in enumerate(lines) if "with unsafe():" in line)
    assert lines[at - 1].strip().startswith("#") and "measured" in "".join(lines[at - 8:at])


def test_tiles_entries_set_each_projections_tile_and_hints():
    """A ``tiles`` entry (BM, BK, occupancy, latency, tma) reaches that projection's kernel
    only (its decorator and its weight loads), the kernel still checks clean, and the step with
    those tiles still matches the reference."""
    from cutile_lab.kernels import decode as D
    config = tiny()
    prompt = [int(t) for t in RNG.integers(0, config.vocab_size, 3)]
    weights, ref_tokens = _varied_weights(config, prompt, 6)
    tiles = {"qkv": (8, 32, 4, 3, False), "o": (16, 16, 1), "down": (4, 64, 2, 10)}
    model = Qwen3(config, weights, dtype="f32", max_seq=16, chunk=8, tiles=tiles)
    qkv, o = model._gemv(D.RMS_GEMV, "qkv"), model._gemv(D.GEMV_RESIDUAL, "o")
    down, up = model._gemv(D.GEMV_RESIDUAL, "down"), model._gemv(D.RMS_GEMV_SWIGLU, "gate_up")
    assert "occupancy=4" in qkv.source.text and "latency=3, allow_tma=False" in qkv.source.text
    assert "occupancy=1" in o.source.text and "latency" not in o.source.text
    assert "latency=10" in down.source.text and "allow_tma" not in down.source.text
    assert "occupancy=2" in up.source.text and "latency" not in up.source.text
    for k in (qkv, o, down, up):
        assert k.check() == [], k.name
    assert model._tile("qkv") == (8, 32) and model._tile("o") == (16, 16)
    logits = []
    assert model.generate(prompt, 6, logits=logits)[0].tolist() == ref_tokens
    ref = reference.logits(config, weights, prompt + ref_tokens[:-1])
    np.testing.assert_allclose(np.concatenate(logits, axis=0), ref, rtol=1e-4,
                               atol=1e-4 * np.abs(ref).max())


def test_tensor_core_attention_of_a_bf16_model_agrees_with_the_f32_products():
    """bf16 storage runs attention's scores and P·V through ``mma`` (``MMA=1``: a KV group of
    4 query rows padded to 16); f32 storage keeps the broadcast products. On the same bf16
    model both forms give logits within bf16 rounding of each other and of the reference at
    every position of a prompt that spans several cache blocks."""
    config = Qwen3Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=8,
                         num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                         head_dim=16, tie_word_embeddings=False, name="tiny-g4")
    prompt = [int(t) for t in RNG.integers(0, config.vocab_size, 9)]
    weights = random_weights(config, seed=int(RNG.integers(1 << 31)))

    class Broadcast(Qwen3):
        attention_mma = False

    runs = []
    for cls in (Qwen3, Broadcast):
        model = cls(config, weights, dtype="bf16", max_seq=16, chunk=4)
        assert model.attention_mma is (cls is Qwen3)
        logits = []
        model.generate(prompt, 1, logits=logits)
        runs.append(np.concatenate(logits, axis=0))
    ref = reference.logits(config, weights, prompt)
    assert np.abs(runs[0] - runs[1]).max() < 0.03 * np.abs(ref).max()
    assert np.abs(runs[0] - ref).max() < 0.05 * np.abs(ref).max()
    assert not np.array_equal(runs[0], runs[1])       # two computations, not one twice


def test_tiles_the_devices_sweep_stored_are_used_on_that_device_at_batch_one(monkeypatch):
    """``kernels/tuned.json``'s ``gemv`` family (what ``bench_qwen3.py --store-tiles`` writes
    per device) sizes a projection's tile and occupancy on that device at batch 1; not on the
    simulator, not at another batch size, not for another device, and never over ``tiles=``."""
    import cutile_lab.runtime as runtime
    from cutile_lab.kernels import decode as D
    from cutile_lab.kernels import tuning
    from cutile_lab.models import qwen3 as qwen3_module
    config = tiny()
    weights = random_weights(config, seed=int(RNG.integers(1 << 31)))
    model = Qwen3(config, weights, dtype="f32", max_seq=16, chunk=8)
    given = Qwen3(config, weights, dtype="f32", max_seq=16, chunk=8, tiles={"qkv": (4, 16)})
    batched = Qwen3(config, weights, dtype="f32", max_seq=16, chunk=8, batch=2)
    rule = model._tile("qkv")
    n, k = model.projection_shape("qkv")
    bm, bk = rule[0] * 2, rule[1] // 2
    data = {"Fake GPU (1.0 TB/s)": {"gemv": {f"qkv:{n}x{k}": {"BM": bm, "BK": bk,
                                                              "occupancy": 3}}}}
    monkeypatch.setattr(tuning, "_file", [data])
    assert model.measured_tile("qkv") is None             # the simulator: the rule
    monkeypatch.setattr(runtime, "backend", lambda: "gpu")
    monkeypatch.setattr(qwen3_module, "_sm_count", lambda: 132)   # the rule's SM count
    monkeypatch.setattr(tuning, "device_target", lambda info=None: ("Other GPU (2.0 TB/s)",
                                                                    "sm_90"))
    assert model.measured_tile("qkv") is None and model._tile("qkv") == rule
    monkeypatch.setattr(tuning, "device_target", lambda info=None: ("Fake GPU (1.0 TB/s)",
                                                                    "sm_90"))
    assert model.measured_tile("qkv") == (bm, bk, 3) and model._tile("qkv") == (bm, bk)
    assert "occupancy=3" in model._gemv(D.RMS_GEMV, "qkv").source.text
    assert model.measured_tile("o") is None                # only what was stored
    assert "occupancy=2" in model._gemv(D.GEMV_RESIDUAL, "o").source.text
    assert given._tile("qkv") == (4, 16)                   # tiles= wins
    assert "occupancy=2" in given._gemv(D.RMS_GEMV, "qkv").source.text
    assert batched.measured_tile("qkv") is None            # measured at batch 1 only


def test_the_sweeps_winners_stored_by_the_benchmark_are_what_the_model_then_uses(monkeypatch,
                                                                                 tmp_path):
    """``bench_qwen3.py --store-tiles``: the sweep's fastest (BM, BK, occupancy) of each
    projection goes into the tuning file under this device's key, with the times it measured,
    and a model on that device uses exactly those (``current_tile`` reports them)."""
    from types import SimpleNamespace
    import cutile_lab.runtime as runtime
    from benchmarks import bench_qwen3 as bench
    from cutile_lab.kernels import tuning
    from cutile_lab.models import qwen3 as qwen3_module
    import cutile_lab.runtime.device as device
    config = tiny()
    model = Qwen3(config, random_weights(config, seed=int(RNG.integers(1 << 31))), dtype="f32",
                  max_seq=16, chunk=8)
    monkeypatch.setattr(tuning, "TUNED", tmp_path / "tuned.json")
    monkeypatch.setattr(tuning, "_file", [None])
    info = SimpleNamespace(name="Fake GPU", theoretical_bandwidth=1.04e12, arch="sm_90")
    monkeypatch.setattr(device, "device_info", lambda: info)
    rule = bench.current_tile(model, "qkv")
    best = {"qkv": (8, 32, 3), "o": (16, 16, 1)}
    rows = [{"kernel": "qkv", "BM": 8, "BK": 32, "occupancy": 3, "seconds": 1.5e-5},
            {"kernel": "qkv", "BM": rule[0], "BK": rule[1], "occupancy": rule[2],
             "seconds": 2.5e-5},
            {"kernel": "o_proj", "BM": 16, "BK": 16, "occupancy": 1, "seconds": 9e-6},
            {"kernel": "o_proj", "BM": 4, "BK": 64, "occupancy": 2, "error": "did not compile"}]
    stored = bench.store_tiles(model, best, rows)
    key = "Fake GPU (1.0 TB/s)"
    assert stored == {key: {"qkv": {"BM": 8, "BK": 32, "occupancy": 3},
                            "o": {"BM": 16, "BK": 16, "occupancy": 1}}}
    data = json.loads((tmp_path / "tuned.json").read_text())
    n, k = model.projection_shape("qkv")
    assert data[key]["gemv"][f"qkv:{n}x{k}"] == {"BM": 8, "BK": 32, "occupancy": 3}
    times = data[key]["_evidence"]["gemv"][f"qkv:{n}x{k}"]["us_per_launch"]
    assert times == {"8x32/occ3": 15.0, f"{rule[0]}x{rule[1]}/occ{rule[2]}": 25.0}
    monkeypatch.setattr(runtime, "backend", lambda: "gpu")
    monkeypatch.setattr(qwen3_module, "_sm_count", lambda: 132)
    monkeypatch.setattr(tuning, "device_target", lambda info=None: (key, "sm_90"))
    assert bench.current_tile(model, "qkv") == (8, 32, 3)
    assert bench.current_tile(model, "o") == (16, 16, 1)
    assert bench.current_tile(model, "down") == tuple(model._tile("down")) + (2,)
