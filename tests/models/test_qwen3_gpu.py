"""Qwen3 decode from the library's kernels on the GPU: against transformers' Qwen3ForCausalLM
with the same random weights (greedy tokens identical for 32 steps, every step's logits close),
through one CUDA graph replayed per token; the unsafe cache append agrees with the safe one."""
import numpy as np
import pytest

from cutile_lab.models import reference
from cutile_lab.models.qwen3 import Qwen3
from cutile_lab.models.qwen3_config import Qwen3Config, random_weights

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng()


@pytest.fixture(scope="module")
def gpu():
    import cutile_lab as cl
    if not cl.gpu_available():
        pytest.skip("no GPU found")
    cl.set_backend("gpu")
    yield cl
    cl.set_backend(None)


def small(tied=False, head_dim=16):
    return Qwen3Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                       head_dim=head_dim, tie_word_embeddings=tied, name="tiny")


def _varied(config, prompt, n):
    # with tied embeddings the current token's own embedding dominates the last hidden state
    # at scale 1, and greedy decoding repeats it: larger projections let the layers speak
    scale = 3.0 if config.tie_word_embeddings else 1.0
    for _ in range(20):
        w = random_weights(config, seed=int(RNG.integers(1 << 31)), scale=scale)
        ref = reference.greedy(config, w, prompt, n)
        if len(set(ref)) >= 4:
            return w
    pytest.fail("no random weights with a varied greedy continuation in 20 draws")


@pytest.mark.parametrize("tied", [False, True])
def test_32_greedy_tokens_identical_to_transformers(gpu, tied):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    config = small(tied)
    prompt = [int(t) for t in RNG.integers(0, config.vocab_size, 5)]
    weights = _varied(config, prompt, 32)
    hf = reference.transformers_model(config, weights, dtype="float32")
    hf_tokens, hf_logits = reference.transformers_greedy(hf, prompt, 32)
    model = Qwen3(config, weights, dtype="f32", max_seq=48, chunk=16)
    graph = model.graph()
    assert graph.num_kernels == len(model.launches)
    logits = []
    tokens = model.generate(prompt, 32, logits=logits)
    assert tokens[0].tolist() == hf_tokens
    got = np.concatenate(logits, axis=0)[len(prompt) - 1:]
    want = hf_logits[len(prompt) - 1:]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


def test_bf16_head_dim_128_close_to_transformers_and_unsafe_append_identical(gpu):
    """The head_dim of the real models (128) in bf16, a KV group of 4 as in Qwen3-4B/8B, the
    cache split over several blocks; a second replay sequence on the same graph (reset)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    config = Qwen3Config(hidden_size=256, num_hidden_layers=2, num_attention_heads=8,
                         num_key_value_heads=2, intermediate_size=512, vocab_size=512,
                         head_dim=128, tie_word_embeddings=True, name="small")
    weights = random_weights(config, seed=int(RNG.integers(1 << 31)))
    prompt = [int(t) for t in RNG.integers(0, config.vocab_size, 40)]
    hf = reference.transformers_model(config, weights, dtype="bfloat16")
    hf_tokens, hf_logits = reference.transformers_greedy(hf, prompt, 8)
    model = Qwen3(config, weights, dtype="bf16", max_seq=64, chunk=16)
    model.graph()
    logits = []
    tokens = model.generate(prompt, 8, logits=logits)
    got = np.concatenate(logits, axis=0)
    scale = np.abs(hf_logits).max()
    assert np.abs(got[:len(prompt)] - hf_logits[:len(prompt)]).max() < 0.05 * scale
    # the greedy tokens agree for as long as the sequences are the same, wherever the top two
    # logits are further apart than the two models' bf16 rounding differs (a near tie may go
    # either way: from there on the sequences may part, and nothing more is compared)
    for i in range(8):
        row = len(prompt) - 1 + i
        err = np.abs(got[row] - hf_logits[row]).max()
        top2 = np.sort(hf_logits[row])[-2:]
        assert err < 0.05 * scale
        if top2[1] - top2[0] <= 2 * err:
            break
        assert tokens[0][i] == hf_tokens[i], (i, tokens[0].tolist(), hf_tokens)
    again = model.generate(prompt, 8)
    assert (again == tokens).all()
    unsafe = model.variant(unsafe_append=True)
    unsafe.graph()
    unsafe_logits = []
    assert (unsafe.generate(prompt, 8, logits=unsafe_logits) == tokens).all()
    np.testing.assert_array_equal(np.concatenate(unsafe_logits, axis=0), got)
