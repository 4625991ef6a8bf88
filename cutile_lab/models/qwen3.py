"""Qwen3 decode from the lab's safe kernels: buffers, KV cache, one token step.

Owns ``Qwen3``: the device buffers, the KV cache, and the launches of one decode step for a batch
of sequences in lockstep. The configurations (``Qwen3Config``) and weights (``load_checkpoint``,
``random_weights``) it is made from live in ``qwen3_config``. A step is, per layer, six kernels
of ``cutile_lab.kernels.decode``:

    qkv  = rms_gemv(x, input_norm, [Wq; Wk; Wv])             RMSNorm fused into the projection
    part = attention_decode(qkv, cache, pos)                   q/k norm, RoPE, cache append, split;
                                                               tensor cores for bf16/f16
    attn = attention_combine(part)                             the split's log-sum-exp merge
    x'   = gemv_residual(attn, Wo, x)                          the residual add fused
    h    = rms_gemv_swiglu(x', post_norm, Wg, Wu)              RMSNorm and SwiGLU fused
    x    = gemv_residual(h, Wd, x')

then the LM head with the final norm and the per-tile maximum (``rms_gemv_argmax``) and the
greedy token (``argmax_step``, which also advances the position). The first kernel of a step
gathers the embedding of the token at the current position (from the prompt while there is one,
else the token the step before chose). The step's position is a device scalar, so nothing a
launch is given changes from one step to the next and the whole step is one CUDA graph
(``Qwen3.graph()``), replayed once per token.
"""
from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np

from cutile_lab.errors import LaunchError
from cutile_lab.kernels import decode as D
from cutile_lab.models.qwen3_config import (Qwen3Config, load_checkpoint, random_weights,
                                            rope_tables)

# instances per SM the GEMV and attention kernels are compiled for (the ``occupancy`` hint): two
# overlap one instance's first loads with the other's stream, and halve the registers (128)
OCCUPANCY = 2


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@dataclasses.dataclass
class Launch:
    """One kernel launch of the step: what it is, what it reads and writes (for the roofline)."""

    name: str
    make: object            # () -> DeviceOp
    bytes: int              # read and written by one launch
    kernel: str
    flops: int = 0

    @property
    def kind(self) -> str:
        """The launch's role without its layer: ``qkv``, ``attention``, ..., ``lm_head``."""
        return self.name.split(".", 1)[-1]


class Qwen3:
    """A Qwen3 decoder on the device, for greedy decode of ``batch`` sequences in lockstep.

    ``Qwen3(config, weights)`` takes NumPy arrays (or device tensors, or anything
    ``cl.asarray`` takes: PyTorch tensors are shared without a copy) by Hugging Face names.
    ``reset(prompt)`` loads prompts; ``step()`` runs one token (through the captured graph once
    ``graph()`` was called); ``generate(prompt, n)`` does both and returns the new tokens.
    ``unsafe_append=True`` appends to the KV cache with the ``unsafe`` row store
    (``ATTENTION_DECODE_UNSAFE``) instead of the safe kernel that owns its cache block.
    ``tiles`` sets a projection's (``qkv``, ``o``, ``gate_up``, ``down``, ``lm_head``) GEMV
    tile and hints: ``(BM, BK)`` or ``(BM, BK, occupancy, latency, tma)`` (see ``_gemv``).
    """

    def __init__(self, config: Qwen3Config, weights: dict, *, dtype: str = "bf16",
                 max_seq: int = 256, batch: int = 1, chunk: int = 64,
                 unsafe_append: bool = False, tiles: dict | None = None):
        import cutile_lab.runtime as cl
        from cutile_lab.runtime.dtypes import as_dtype
        self.cl = cl
        self.config = c = config
        self.dtype = as_dtype(dtype)
        self.batch = batch
        self.chunk = chunk
        self.max_seq = -(-max_seq // chunk) * chunk
        self.unsafe_append = unsafe_append
        self.tiles = dict(tiles or {})
        g = c.group
        if c.num_attention_heads % c.num_key_value_heads:
            raise LaunchError("num_attention_heads must be a multiple of num_key_value_heads")
        if g & (g - 1) or c.head_dim & (c.head_dim - 1) or chunk & (chunk - 1):
            raise LaunchError("the heads of a KV group, head_dim and chunk must be powers of two "
                              "(tile shapes)")
        if (c.num_key_value_heads * (g + 2)) % g:
            raise LaunchError("this kernel reads a KV group's query heads as one tile: the heads "
                              "per token (q, k, v) must be a multiple of the group size")
        self.weights = self._upload(weights)
        self._alloc()
        self._launches = self._plan()
        self._graph = None

    def variant(self, **options) -> "Qwen3":
        """The same weights (on the device, not copied) with other options — ``unsafe_append``,
        ``chunk``, ``tiles``, ``max_seq`` — and buffers and a KV cache of its own."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        for k, v in options.items():
            if k not in ("unsafe_append", "chunk", "tiles", "max_seq"):
                raise LaunchError(f"variant() takes unsafe_append, chunk, tiles or max_seq, "
                                  f"not {k}")
            setattr(other, k, dict(v) if k == "tiles" else v)
        other.max_seq = -(-other.max_seq // other.chunk) * other.chunk
        other._alloc()
        other._launches = other._plan()
        other._graph = None
        return other

    # --- weights and buffers ---------------------------------------------------------------------
    def _dev(self, a, dtype=None):
        cl = self.cl
        dt = dtype or self.dtype
        if isinstance(a, np.ndarray):
            from cutile_lab.runtime.dtypes import numpy_dtype
            a = np.ascontiguousarray(a.astype(numpy_dtype(dt), copy=False))
            return cl.from_numpy(a, dt).sync()
        t = cl.asarray(a)
        if t.dtype != dt:
            raise LaunchError(f"a weight of dtype {t.dtype} for a {dt} model",
                              help="convert it first (e.g. tensor.to(torch.bfloat16))")
        return t

    def _upload(self, w: dict) -> dict:
        c = self.config
        missing = [k for k in c.weight_shapes() if k not in w]
        if missing:
            raise LaunchError(f"{len(missing)} weight(s) missing, e.g. {missing[0]}")
        out = {}
        for n in range(c.num_hidden_layers):
            p = f"model.layers.{n}."
            qkv = [w[p + f"self_attn.{x}_proj.weight"] for x in "qkv"]
            if all(isinstance(a, np.ndarray) for a in qkv):
                out[p + "qkv"] = self._dev(np.concatenate(qkv, axis=0))
            else:
                out[p + "qkv"] = self._dev(_concat_rows(qkv))
            for k in ("self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                      "mlp.down_proj.weight", "input_layernorm.weight",
                      "post_attention_layernorm.weight", "self_attn.q_norm.weight",
                      "self_attn.k_norm.weight"):
                out[p + k] = self._dev(w[p + k])
        out["embed"] = self._dev(w["model.embed_tokens.weight"])
        out["norm"] = self._dev(w["model.norm.weight"])
        out["lm_head"] = (out["embed"] if c.tie_word_embeddings
                          else self._dev(w["lm_head.weight"]))
        return out

    def _alloc(self) -> None:
        cl, c, B = self.cl, self.config, self.batch
        from cutile_lab.runtime.dtypes import as_dtype
        f32, i32 = as_dtype("f32"), as_dtype("i32")
        dt = self.dtype
        kv, g, d = c.num_key_value_heads, c.group, c.head_dim
        heads = c.num_attention_heads + 2 * kv
        self.splits = ns = self.max_seq // self.chunk
        self.x = [cl.zeros((B, c.hidden_size), dt).sync() for _ in range(2)]
        self.qkv = cl.zeros((B, heads * d), dt).sync()
        self.part = cl.zeros((B * kv, ns * g, d), f32).sync()
        self.mx = cl.zeros((B * kv, ns * g, 1), f32).sync()
        self.sm = cl.zeros((B * kv, ns * g, 1), f32).sync()
        self.attn = cl.zeros((B * kv, g, d), dt).sync()
        self.h = cl.zeros((B, c.intermediate_size), dt).sync()
        self.kcache = [cl.zeros((B * kv, self.max_seq, d), dt).sync()
                       for _ in range(c.num_hidden_layers)]
        self.vcache = [cl.zeros((B * kv, self.max_seq, d), dt).sync()
                       for _ in range(c.num_hidden_layers)]
        bm = self._tile("lm_head")[0]
        self.head_tiles = -(-c.vocab_size // bm)
        self.logits = cl.zeros((B, c.vocab_size), f32).sync()
        self.best = cl.zeros((B, self.head_tiles), f32).sync()
        self.best_at = cl.zeros((B, self.head_tiles), i32).sync()
        self.token = cl.zeros((_pow2(B), 1), i32).sync()
        self.pos = cl.zeros((1, 1), i32).sync()
        self.prompt_len = cl.zeros((1, 1), i32).sync()
        self.ids = cl.zeros((B, self.max_seq), i32).sync()
        cos, sin = rope_tables(c, self.max_seq)
        self.cos = self._dev(cos, f32)
        self.sin = self._dev(sin, f32)

    def projection_shape(self, which: str) -> tuple[int, int]:
        """(N, K) of the weight of ``qkv``, ``o``, ``gate_up`` (each of the two), ``down`` or
        ``lm_head``."""
        c = self.config
        return {"qkv": ((c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim,
                        c.hidden_size),
                "o": (c.hidden_size, c.num_attention_heads * c.head_dim),
                "gate_up": (c.intermediate_size, c.hidden_size),
                "down": (c.hidden_size, c.intermediate_size),
                "lm_head": (c.vocab_size, c.hidden_size)}[which]

    def _tile(self, which: str) -> tuple[int, int]:
        """(BM, BK) of a projection, unless ``tiles=`` gave it or the device's sweep measured it
        (``measured_tile``). Else the rule: a GEMV instance on Hopper takes
        half an SM (``occupancy=2``: 128 registers x 256 threads, its loads staged in shared
        memory), so instances run in waves of two per SM: BM (rows per instance: 16, 8 or 4)
        is the largest whose last wave is nearly full (within 3% of the best), and BK is as wide
        as keeps the (BM, BK) f32 accumulator at 8192 elements (4096 each where two weights
        stream at once), at most 1024 (2 KiB of a bf16 row per load) and never wider than K
        rounded up. ``benchmarks/bench_qwen3.py`` sweeps BM per projection on the device."""
        if which in self.tiles:
            return tuple(self.tiles[which])[:2]
        measured = self.measured_tile(which)
        if measured is not None:
            return measured[:2]
        n, k = self.projection_shape(which)
        slots = OCCUPANCY * _sm_count()

        def filled(bm):
            tiles = -(-n // bm) * self.batch
            return tiles / (-(-tiles // slots) * slots)
        best = max(filled(bm) for bm in (16, 8, 4))
        bm = next(bm for bm in (16, 8, 4) if filled(bm) >= best - 0.03)
        budget = 4096 if which == "gate_up" else 8192
        return bm, min(1024, budget // bm, _pow2(k))

    def measured_tile(self, which: str) -> tuple[int, int, int] | None:
        """(BM, BK, occupancy) of a projection as the device's sweep measured it (the ``gemv``
        family of ``kernels/tuned.json``, variant ``"<which>:<N>x<K>"``, stored per device by
        ``bench_qwen3.py --store-tiles``), or None: at batch 1 on a GPU whose sweep stored one
        (elsewhere the rule of ``_tile`` sizes the tile)."""
        from cutile_lab.runtime import backend
        if self.batch != 1 or backend() != "gpu":
            return None
        from cutile_lab.kernels.tuning import device_target, shared_config
        n, k = self.projection_shape(which)
        cfg = shared_config("gemv", device_target(), f"{which}:{n}x{k}")
        if "BM" not in cfg or "BK" not in cfg:
            return None
        return int(cfg["BM"]), int(cfg["BK"]), int(cfg.get("occupancy", OCCUPANCY))

    def _gemv(self, template, which: str):
        """The kernel of a projection: ``template`` with its compiler hints. A ``tiles`` entry
        (BM, BK, occupancy, latency, tma) sets the occupancy hint (default ``OCCUPANCY``), the
        latency hint of the weight loads (default 0: the compiler's own) and whether they may
        use TMA (default True)."""
        tile = self.tiles.get(which) or self.measured_tile(which) or ()
        extra = tuple(tile)[2:] + (None, None, None)
        occ, lat, tma = extra[:3]
        loads = (f", latency={lat}" if lat else "") + (", allow_tma=False" if tma is False
                                                         else "")
        return template.kernel(dt=self.dtype.name, hints=f", occupancy={occ or OCCUPANCY}",
                               lat=loads)

    @property
    def attention_mma(self) -> bool:
        """Whether attention's scores and P·V run on the tensor cores (16-bit storage: the
        products of two bf16/f16 values are exact in their f32 accumulators) or as broadcast
        products in f32 (an f32 model: the tensor cores' f32 path may round to TF32)."""
        return self.dtype.itemsize == 2

    # --- the step --------------------------------------------------------------------------------
    def _plan(self) -> list[Launch]:
        """The launches of one decode step, in order: the embedding, six per layer, the head."""
        c, B, dt = self.config, self.batch, self.dtype.name
        h, kv, g, d = c.hidden_size, c.num_key_value_heads, c.group, c.head_dim
        heads = c.num_attention_heads + 2 * kv
        occ = f", occupancy={OCCUPANCY}"
        kernels = SimpleNamespace(
            rms=self._gemv(D.RMS_GEMV, "qkv"),
            swiglu=self._gemv(D.RMS_GEMV_SWIGLU, "gate_up"),
            res=self._gemv(D.GEMV_RESIDUAL, "o"),
            res_d=self._gemv(D.GEMV_RESIDUAL, "down"),
            attend=(D.ATTENTION_DECODE_UNSAFE if self.unsafe_append else D.ATTENTION_DECODE)
            .kernel(dt=dt, hints=occ,
                    small=", allow_tma=False" if self.attention_mma else ""),
            combine=D.ATTENTION_COMBINE.kernel(dt=dt))
        # views shared by every layer's launches
        views = SimpleNamespace(
            qkv3=self.qkv.reshape(B * heads, 2, d // 2),
            part4=self.part.reshape(B * kv, self.splits, g, d),
            mx4=self.mx.reshape(B * kv, self.splits, g, 1),
            sm4=self.sm.reshape(B * kv, self.splits, g, 1),
            attn2=self.attn.reshape(B, c.num_attention_heads * d))
        L: list[Launch] = []

        def add(name, kernel, make, nbytes, flops=0):
            L.append(Launch(name, make, int(nbytes), kernel.name, int(flops)))

        x0 = self.x[0]
        hb = _pow2(h)
        w = self.weights
        embed = D.EMBED.kernel(dt=dt)
        add("embed", embed, lambda: embed(x0.partition_mut((1, hb)), w["embed"], self.ids,
                                          self.token, self.pos, self.prompt_len),
            2 * B * h * self.dtype.itemsize)
        for n in range(c.num_hidden_layers):
            self._plan_layer(n, add, kernels, views)
        self._plan_head(add)
        return L

    def _plan_layer(self, n: int, add, kernels: SimpleNamespace, views: SimpleNamespace) -> None:
        """Layer ``n``'s launches: normed QKV projection, attention over the cache in chunks,
        the chunks' combine, output projection with the residual, normed gate/up with SwiGLU,
        down projection with the residual (bytes and flops of each for the roofline)."""
        c, B, w = self.config, self.batch, self.weights
        it = self.dtype.itemsize
        h, kv, g, d = c.hidden_size, c.num_key_value_heads, c.group, c.head_dim
        heads = c.num_attention_heads + 2 * kv
        eps = float(c.rms_norm_eps)
        qk_scale = (1.0 / math.sqrt(d)) * math.log2(math.e)
        x0, x1 = self.x
        qkv3, part4, mx4, sm4, attn2 = views.qkv3, views.part4, views.mx4, views.sm4, views.attn2
        rms, attend, combine = kernels.rms, kernels.attend, kernels.combine
        res, res_d, swiglu = kernels.res, kernels.res_d, kernels.swiglu
        ch = self.chunk
        bs = min(64, _pow2(self.splits))
        tq, to, tgu, td = (self._tile(k) for k in ("qkv", "o", "gate_up", "down"))
        kv_step = 2 * B * kv * self.max_seq * d * it      # the cache blocks read (and written)
        p = f"model.layers.{n}."
        kc, vc = self.kcache[n], self.vcache[n]
        add(f"L{n}.qkv", rms,
            lambda p=p: rms(self.qkv.partition_mut((1, tq[0])), x0,
                            w[p + "input_layernorm.weight"], w[p + "qkv"], h, eps,
                            BK=tq[1]),
            w[p + "qkv"].nbytes + B * (h + heads * d) * it, 2 * B * w[p + "qkv"].size)
        add(f"L{n}.attention", attend,
            lambda p=p, kc=kc, vc=vc: attend(
                kc.partition_mut((1, ch, d)), vc.partition_mut((1, ch, d)),
                self.part.partition_mut((1, g, d)), self.mx.partition_mut((1, g, 1)),
                self.sm.partition_mut((1, g, 1)), qkv3, w[p + "self_attn.q_norm.weight"]
                .reshape(2, d // 2), w[p + "self_attn.k_norm.weight"].reshape(2, d // 2),
                self.cos, self.sin, self.pos, kv, eps, qk_scale, HD=d // 2,
                MMA=int(self.attention_mma), MQ=max(g, 16)),
            (kv_step if self.unsafe_append else 2 * kv_step)
            + self.part.nbytes + 2 * self.mx.nbytes, 2 * g * kv_step // it)
        add(f"L{n}.combine", combine,
            lambda: combine(self.attn.partition_mut((1, 1, d)), part4, mx4, sm4, self.pos,
                            CH=ch, BS=bs),
            self.part.nbytes + 2 * self.mx.nbytes + self.attn.nbytes)
        add(f"L{n}.o_proj", res,
            lambda p=p: res(x1.partition_mut((1, to[0])), attn2,
                            w[p + "self_attn.o_proj.weight"], x0, BK=to[1]),
            w[p + "self_attn.o_proj.weight"].nbytes + B * (3 * h) * it + self.attn.nbytes,
            2 * B * w[p + "self_attn.o_proj.weight"].size)
        add(f"L{n}.gate_up", swiglu,
            lambda p=p: swiglu(self.h.partition_mut((1, tgu[0])), x1,
                               w[p + "post_attention_layernorm.weight"],
                               w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"],
                               h, eps, BK=tgu[1]),
            2 * w[p + "mlp.gate_proj.weight"].nbytes + self.h.nbytes + B * h * it,
            4 * B * w[p + "mlp.gate_proj.weight"].size)
        add(f"L{n}.down", res_d,
            lambda p=p: res_d(x0.partition_mut((1, td[0])), self.h,
                            w[p + "mlp.down_proj.weight"], x1, BK=td[1]),
            w[p + "mlp.down_proj.weight"].nbytes + self.h.nbytes + 3 * B * h * it,
            2 * B * w[p + "mlp.down_proj.weight"].size)

    def _plan_head(self, add) -> None:
        """The last two launches: the normed LM head with a per-tile argmax, and the argmax over
        the tiles that gives each sequence its next token."""
        c, B, w = self.config, self.batch, self.weights
        h, eps = c.hidden_size, float(c.rms_norm_eps)
        x0 = self.x[0]
        head = self._gemv(D.RMS_GEMV_ARGMAX, "lm_head")
        th = self._tile("lm_head")
        add("lm_head", head,
            lambda: head(self.logits.partition_mut((1, th[0])), self.best.partition_mut((1, 1)),
                         self.best_at.partition_mut((1, 1)), x0, w["norm"], w["lm_head"], h,
                         eps, c.vocab_size, BK=th[1]),
            w["lm_head"].nbytes + self.logits.nbytes + 2 * self.best.nbytes,
            2 * B * w["lm_head"].size)
        am = D.ARGMAX.kernel()
        bb = _pow2(B)
        add("argmax", am,
            lambda: am(self.token.partition_mut((bb, 1)), self.pos.partition_mut((1, 1)),
                       self.best, self.best_at, BC=min(16384, _pow2(self.head_tiles))),
            2 * self.best.nbytes)

    @property
    def launches(self) -> list[Launch]:
        """The kernels of one step, in order, with the bytes each moves."""
        return list(self._launches)

    def kinds(self) -> list[str]:
        """The kinds of launch of a step, in order (``embed``, ``qkv``, ..., ``argmax``)."""
        return list(dict.fromkeys(x.kind for x in self._launches))

    def graph_of(self, kind: str):
        """A CUDA graph of every launch of one kind in the step (``qkv``: one per layer, each
        with its own layer's weights, so none is still in L2 from the launch before): what
        that kernel costs alone. Returns (graph, number of launches in it)."""
        launches = [x for x in self._launches if x.kind == kind]
        if not launches:
            raise LaunchError(f"no launch of kind {kind!r} in the step",
                              help=f"use one of {self.kinds()}")
        cl = self.cl
        return cl.graph(lambda: cl.zip(*[x.make() for x in launches])), len(launches)

    def step_op(self):
        """One decode step as a DeviceOp (a chain of the step's launches, one stream)."""
        return self.cl.zip(*[launch.make() for launch in self._launches])

    def graph(self):
        """Capture the step into a CUDA graph (once); ``step()`` replays it from then on."""
        if self._graph is None:
            self._graph = self.cl.graph(self.step_op)
        return self._graph

    def step(self) -> None:
        """Run one token of every sequence (the graph if captured, else the launches)."""
        if self._graph is not None:
            self._graph.replay()
        else:
            self.step_op().sync()

    # --- prompts and greedy decode ---------------------------------------------------------------
    def reset(self, prompt) -> None:
        """Start over with ``prompt`` (token ids, one row per sequence of the batch)."""
        ids = np.asarray(prompt, dtype=np.int32)
        if ids.ndim == 1:
            ids = ids[None, :]
        if ids.shape[0] != self.batch:
            raise LaunchError(f"{ids.shape[0]} prompt(s) for a model of batch {self.batch}")
        if not 1 <= ids.shape[1] <= self.max_seq:
            raise LaunchError(f"a prompt of {ids.shape[1]} tokens: give 1 to {self.max_seq}")
        if ids.min() < 0 or ids.max() >= self.config.vocab_size:
            raise LaunchError(f"token ids must lie in [0, {self.config.vocab_size})")
        cl = self.cl
        copy = D.COPY.kernel(dt="i32")
        full = np.zeros((self.batch, self.max_seq), np.int32)
        full[:, :ids.shape[1]] = ids
        for dst, src in ((self.ids, full), (self.pos, np.zeros((1, 1), np.int32)),
                         (self.prompt_len, np.full((1, 1), ids.shape[1], np.int32))):
            copy(dst.partition_mut((1, _pow2(dst.shape[1]))),
                 cl.from_numpy(src, "i32").sync()).sync()
        self.prompt_tokens = ids.shape[1]

    def tokens(self) -> np.ndarray:
        """The token each sequence's last step chose, (batch,)."""
        return self.token.to_numpy()[:self.batch, 0].copy()

    def generate(self, prompt, n: int, *, logits: list | None = None) -> np.ndarray:
        """Greedy decode: ``n`` new tokens per sequence after ``prompt``, (batch, n). With
        ``logits`` (a list), the logits of each step are appended to it."""
        self.reset(prompt)
        if self.prompt_tokens + n - 1 > self.max_seq:
            raise LaunchError(f"a prompt of {self.prompt_tokens} and {n} new tokens do not fit "
                              f"a cache of {self.max_seq} positions",
                              help="build the model with a larger max_seq")
        out = []
        for i in range(self.prompt_tokens + n - 1):
            self.step()
            if logits is not None:
                logits.append(self.logits.to_numpy().copy())
            if i >= self.prompt_tokens - 1:
                out.append(self.tokens())
        return np.stack(out, axis=1)

    def bytes_per_token(self, length: int) -> int:
        """Weights and KV cache one step reads at context ``length``: the roofline's bytes."""
        it = self.dtype.itemsize
        return (self.config.weight_bytes(it)
                + self.config.kv_bytes(length, it, self.batch))

    @classmethod
    def random(cls, name: str | Qwen3Config, *, seed: int | None = None, **kw) -> "Qwen3":
        """A model of a named configuration's shapes with random weights (NumPy, uploaded)."""
        config = name if isinstance(name, Qwen3Config) else Qwen3Config.named(name)
        return cls(config, random_weights(config, seed=seed), **kw)

    @classmethod
    def from_checkpoint(cls, path, **kw) -> "Qwen3":
        """A model from a local Hugging Face checkpoint folder (safetensors)."""
        config, weights = load_checkpoint(path)
        return cls(config, weights, **kw)


def _concat_rows(parts):
    """Row-concatenation of device arrays (PyTorch tensors: ``torch.cat``; anything else is
    copied through NumPy)."""
    try:
        import torch
        if all(isinstance(p, torch.Tensor) for p in parts):
            return torch.cat(parts, dim=0).contiguous()
    except ImportError:
        pass
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def _sm_count() -> int:
    """The GPU's SM count (an H100 SXM's 132 on the simulator, for the same tiles)."""
    from cutile_lab.runtime import backend
    if backend() == "gpu":
        from cutile_lab.runtime import device_info
        return device_info().sm_count
    return 132


__all__ = ["Qwen3", "Qwen3Config", "load_checkpoint", "random_weights", "rope_tables", "Launch"]
