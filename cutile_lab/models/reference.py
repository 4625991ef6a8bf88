"""A NumPy reference of the Qwen3 decoder (float64, the whole sequence at once, no cache): the
independent check of ``qwen3``'s kernel path, written straight from the architecture (Hugging
Face's ``modeling_qwen3``: RMSNorm, q/k RMSNorm per head, rotary embedding with the
``rotate_half`` pairing, grouped-query causal attention, SwiGLU MLP, tied or untied head).
It shares no code with the kernels."""
from __future__ import annotations

import numpy as np


def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x, pos, theta):
    d = x.shape[-1]
    inv = 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1)
    sin = np.concatenate([np.sin(ang)] * 2, -1)
    half = d // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def logits(config, weights: dict, tokens) -> np.ndarray:
    """Logits (len(tokens), vocab) of the causal forward pass over ``tokens`` (one sequence)."""
    c = config
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    ids = np.asarray(tokens)
    n, d = len(ids), c.head_dim
    H, KV = c.num_attention_heads, c.num_key_value_heads
    eps = c.rms_norm_eps
    pos = np.arange(n, dtype=np.float64)
    x = w["model.embed_tokens.weight"][ids]
    mask = np.tril(np.ones((n, n), bool))
    for layer in range(c.num_hidden_layers):
        p = f"model.layers.{layer}."
        a = _rms(x, w[p + "input_layernorm.weight"], eps)
        q = (a @ w[p + "self_attn.q_proj.weight"].T).reshape(n, H, d)
        k = (a @ w[p + "self_attn.k_proj.weight"].T).reshape(n, KV, d)
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(n, KV, d)
        q = _rope(_rms(q, w[p + "self_attn.q_norm.weight"], eps).transpose(1, 0, 2), pos,
                  c.rope_theta)
        k = _rope(_rms(k, w[p + "self_attn.k_norm.weight"], eps).transpose(1, 0, 2), pos,
                  c.rope_theta)
        k = np.repeat(k, H // KV, axis=0)
        v = np.repeat(v.transpose(1, 0, 2), H // KV, axis=0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        s = np.where(mask, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(n, H * d)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        m = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = m @ w[p + "mlp.gate_proj.weight"].T
        up = m @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
    x = _rms(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c.tie_word_embeddings else w["lm_head.weight"]
    return x @ head.T


def greedy(config, weights: dict, prompt, n: int) -> list[int]:
    """``n`` greedy tokens after ``prompt`` (each step recomputes the whole sequence)."""
    seq = list(prompt)
    for _ in range(n):
        seq.append(int(np.argmax(logits(config, weights, seq)[-1])))
    return seq[len(prompt):]


def transformers_model(config, weights: dict, *, dtype: str = "float32", device: str = "cuda"):
    """transformers' ``Qwen3ForCausalLM`` of ``config`` holding ``weights`` (NumPy arrays,
    copied; or torch tensors of ``dtype`` on ``device``, shared without a copy), in eval mode.
    Needs ``torch`` and ``transformers``."""
    import torch
    import transformers
    fields = {k: v for k, v in config.to_dict().items()
              if k not in ("model_type", "architectures")}
    hf_config = transformers.Qwen3Config(**fields)
    rope = getattr(hf_config, "rope_parameters", None)
    if isinstance(rope, dict):              # transformers 5 keeps rope_theta in rope_parameters
        rope["rope_theta"] = config.rope_theta
    tdtype = getattr(torch, dtype)
    with torch.device(device):
        model = transformers.Qwen3ForCausalLM(hf_config).to(tdtype)
    state = {}
    for k, v in weights.items():
        if not torch.is_tensor(v):
            v = torch.from_numpy(np.asarray(v, dtype=np.float32))
        state[k] = v.to(device=device, dtype=tdtype)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if unexpected or set(missing) - {"lm_head.weight"}:
        raise ValueError(f"weights do not fit transformers' Qwen3: missing {missing}, "
                         f"unexpected {unexpected}")
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.eval()


def transformers_greedy(model, prompt, n: int):
    """Greedy decode with transformers' KV cache: (the ``n`` tokens, the logits of every
    position from the prompt's last on, as float64 NumPy)."""
    import torch
    device = next(model.parameters()).device
    with torch.no_grad():
        out = model(torch.tensor([list(prompt)], device=device), use_cache=True)
        past, logits = out.past_key_values, [out.logits[0].double().cpu().numpy()]
        tokens = [int(out.logits[0, -1].argmax())]
        for _ in range(n - 1):
            out = model(torch.tensor([[tokens[-1]]], device=device), past_key_values=past,
                        use_cache=True)
            past = out.past_key_values
            logits.append(out.logits[0].double().cpu().numpy())
            tokens.append(int(out.logits[0, -1].argmax()))
    return tokens, np.concatenate(logits, axis=0)
