"""Qwen3 configurations and their weights: ``Qwen3Config`` (the published shapes of
Qwen3-0.6B/1.7B/4B/8B and any ``config.json``, with the weight and KV-cache sizes they imply),
``load_checkpoint`` (a local safetensors checkpoint in the Hugging Face layout, one file or shards
with an index), ``random_weights`` (a configuration's shapes, random values) and ``rope_tables``
(the rotary embedding's cos and sin). No device here: ``qwen3`` uploads them and runs the step.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from cutile_lab.errors import LaunchError

_NAMES = {
    # name: hidden, layers, heads, kv heads, intermediate, tied embeddings
    "Qwen3-0.6B": (1024, 28, 16, 8, 3072, True),
    "Qwen3-1.7B": (2048, 28, 16, 8, 6144, True),
    "Qwen3-4B": (2560, 36, 32, 8, 9728, True),
    "Qwen3-8B": (4096, 36, 32, 8, 12288, False),
}


@dataclasses.dataclass(frozen=True)
class Qwen3Config:
    """The shapes of a Qwen3 decoder (the fields of its Hugging Face ``config.json``)."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int = 151936
    head_dim: int = 128
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    tie_word_embeddings: bool = False
    name: str = "custom"

    @classmethod
    def named(cls, name: str) -> "Qwen3Config":
        """The published shapes of ``Qwen3-0.6B``, ``-1.7B``, ``-4B`` or ``-8B``."""
        if name not in _NAMES:
            raise LaunchError(f"unknown Qwen3 configuration {name!r}",
                              help=f"use one of {sorted(_NAMES)}, or Qwen3Config(...) with "
                                   "explicit sizes")
        h, n, heads, kv, inter, tied = _NAMES[name]
        return cls(h, n, heads, kv, inter, tie_word_embeddings=tied, name=name)

    @classmethod
    def from_dict(cls, d: dict, name: str = "custom") -> "Qwen3Config":
        fields = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in fields and k != "name"}
        if "head_dim" not in d:
            kw["head_dim"] = d["hidden_size"] // d["num_attention_heads"]
        return cls(**kw, name=name)

    def to_dict(self) -> dict:
        """As a Hugging Face ``config.json`` (``Qwen3Config(**d)`` of ``transformers`` takes it)."""
        d = dataclasses.asdict(self)
        d.pop("name")
        d.update(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_act="silu",
                 attention_bias=False, max_position_embeddings=40960)
        return d

    @property
    def group(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight by its Hugging Face name."""
        h, d, i = self.hidden_size, self.head_dim, self.intermediate_size
        q, kv = self.num_attention_heads * d, self.num_key_value_heads * d
        shapes = {"model.embed_tokens.weight": (self.vocab_size, h), "model.norm.weight": (h,)}
        for n in range(self.num_hidden_layers):
            p = f"model.layers.{n}."
            shapes.update({
                p + "input_layernorm.weight": (h,),
                p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
                p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
                p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,),
                p + "post_attention_layernorm.weight": (h,),
                p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h),
                p + "mlp.down_proj.weight": (h, i),
            })
        if not self.tie_word_embeddings:
            shapes["lm_head.weight"] = (self.vocab_size, h)
        return shapes

    def weight_bytes(self, itemsize: int = 2) -> int:
        """Bytes of the weights one decode step reads (the embedding table: one row)."""
        shapes = self.weight_shapes()
        total = sum(math.prod(s) for k, s in shapes.items() if k != "model.embed_tokens.weight")
        if self.tie_word_embeddings:        # the LM head reads the embedding table whole
            total += self.vocab_size * self.hidden_size
        return (total + self.hidden_size) * itemsize

    def kv_bytes(self, length: int, itemsize: int = 2, batch: int = 1) -> int:
        """Bytes of K and V cache that attention over ``length`` positions reads."""
        return (2 * self.num_hidden_layers * self.num_key_value_heads * self.head_dim * length
                * itemsize * batch)


def random_weights(config: Qwen3Config, *, seed: int | None = None, dtype=np.float32,
                   scale: float = 1.0) -> dict[str, np.ndarray]:
    """Random weights of ``config``'s shapes (NumPy): projections ~ N(0, scale²/fan_in), so that
    activations stay of order one through the layers, norm weights near one."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in config.weight_shapes().items():
        if len(shape) == 1:
            w = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
        elif name == "model.embed_tokens.weight":
            w = rng.standard_normal(shape, dtype=np.float32)
        else:
            w = rng.standard_normal(shape, dtype=np.float32) * (scale / math.sqrt(shape[1]))
        out[name] = w.astype(dtype)
    return out


def load_checkpoint(path) -> tuple[Qwen3Config, dict[str, np.ndarray]]:
    """The configuration and weights of a local Hugging Face checkpoint folder: ``config.json``
    and ``model.safetensors``, or shards listed by ``model.safetensors.index.json``."""
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise LaunchError("loading a checkpoint needs the `safetensors` package",
                          help="pip install 'cutile-lab[models]' (or: pip install safetensors)") \
            from None
    folder = Path(path)
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        raise LaunchError(f"no config.json in {folder}",
                          help="pass the folder of a Hugging Face checkpoint (config.json and "
                               "model.safetensors or its shards)")
    config = Qwen3Config.from_dict(json.loads(cfg_file.read_text()), name=folder.name)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (folder / "model.safetensors").is_file():
        files = ["model.safetensors"]
    else:
        raise LaunchError(f"no model.safetensors (or model.safetensors.index.json) in {folder}")
    weights: dict[str, np.ndarray] = {}
    for f in files:
        weights.update(load_file(str(folder / f)))
    missing = [k for k in config.weight_shapes() if k not in weights]
    if missing:
        raise LaunchError(f"the checkpoint in {folder} lacks {len(missing)} weight(s), e.g. "
                          f"{missing[0]}")
    for k, shape in config.weight_shapes().items():
        if tuple(weights[k].shape) != shape:
            raise LaunchError(f"{k} has shape {tuple(weights[k].shape)} in the checkpoint, "
                              f"{shape} in its config.json")
    return config, weights


def rope_tables(config: Qwen3Config, length: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of the rotary embedding, (length, head_dim / 2), f32 (Hugging Face's
    ``rotate_half`` convention: the two halves of a head are the pair)."""
    d = config.head_dim
    inv = 1.0 / (config.rope_theta ** (np.arange(0, d, 2, dtype=np.float32) / d))
    ang = np.arange(length, dtype=np.float32)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
