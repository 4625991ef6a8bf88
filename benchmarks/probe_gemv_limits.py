"""What limits a decode GEMV of 20-30 MB (Qwen3-4B's o_proj, qkv, down)? Two questions, each
answered by timing graphs of one launch per layer (36, each on its own layer's weight):

- **L2**: the GEMV right after a kernel (``touch``) read the same weight, minus ``touch`` alone,
  against the GEMV cold: how much a weight prefetched into L2 would save.
- **split-K**: the GEMV cut along K too (``splitk``: S instances per row tile, each
  ``KS`` k-steps, partial sums written as (S, N) f32, checked against PyTorch; their sum is
  not timed) against the model's GEMV: whether more, shorter instances beat the per-instance
  load chain.

    python benchmarks/probe_gemv_limits.py      # on a machine with a GPU; JSON under $OUT

benchmarks/NOTES.md (Qwen3-4B decode on an H200, session 9) has what it found.
"""
import datetime
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cutile_lab as cl                                                  # noqa: E402
from cutile_lab.lang import *                                            # noqa: E402,F401,F403
from benchmarks.bench_qwen3 import times, weights_for                    # noqa: E402
from benchmarks.common import median, to_torch, use_gpu                  # noqa: E402


@cl.kernel(occupancy=2)
def touch(out: Mut[Tensor[f32, "1, 1"]], w: Tensor[bf16, "?, ?"], BM: Const[int] = 32,
          BK: Const[int] = 256):
    acc = full((BM, BK), 0.0, dtype=f32)
    for k in range(num_tiles(w, 1, (BM, BK))):
        acc = acc + load_tile(w, (tile_id(0), k), (BM, BK)).astype(f32)
    out.store(sum(sum(acc, axis=1, keepdims=True), axis=0, keepdims=True))


SPLITK = '''
@kernel(occupancy={occ})
def splitk_occ{occ}(y: Mut[Tensor[f32, "1, BM"]], x: Tensor[bf16, "?, ?"],
                    w: Tensor[bf16, "?, ?"], KS: Const[int] = 2, BK: Const[int] = 512):
    acc = full((BM, BK), 0.0, dtype=f32)
    for j in range(KS):
        k = tile_id(0) * KS + j
        tx = load_tile(x, (0, k), (1, BK)).astype(f32)
        acc = acc + load_tile(w, (tile_id(1), k), (BM, BK)).astype(f32) * tx
    y.store(reshape(sum(acc, axis=1), (1, BM)))
'''
SPLITK_TRIES = [(2, 16, 512, 1), (2, 16, 512, 2), (2, 16, 256, 2), (2, 32, 256, 2),
                (2, 16, 256, 4), (3, 16, 512, 2), (3, 16, 256, 4), (2, 8, 512, 2),
                (3, 32, 256, 4)]                       # (occupancy, BM, BK, KS)


def main() -> int:
    err = use_gpu()
    if err:
        print(err)
        return 1
    from cutile_lab.models.qwen3 import Qwen3
    from cutile_lab.models.qwen3_config import Qwen3Config
    splitk = {occ: cl.kernels_from_source(SPLITK.format(occ=occ))[f"splitk_occ{occ}"]
              for occ in (2, 3)}
    config = Qwen3Config.named("Qwen3-4B")
    weights, _ = weights_for(config, 0)
    model = Qwen3(config, weights, dtype="bf16", max_seq=1024 + 72)
    stream = cl.stream()
    layers = config.num_hidden_layers
    res: dict = {}

    def per_launch(fn):
        g = cl.graph(fn)
        return median(times(lambda: g.launch(1, stream), stream, warmup=2, repeats=10)) / layers

    for kind, wname in (("o_proj", "self_attn.o_proj.weight"), ("qkv", "qkv"),
                        ("down", "mlp.down_proj.weight")):
        L = [x for x in model.launches if x.kind == kind]
        ws = [model.weights[f"model.layers.{n}.{wname}"] for n in range(layers)]
        N, K = ws[0].shape
        cold = per_launch(lambda: cl.zip(*[x.make() for x in L]))
        res[f"{kind}/model"] = {"us": cold * 1e6, "MB": ws[0].nbytes / 1e6}
        print(kind, res[f"{kind}/model"], flush=True)
        if kind != "down":
            sink = cl.zeros((N // 32, 1), "f32").sync()
            reads = per_launch(lambda: cl.zip(*[touch(sink.partition_mut((1, 1)), w)
                                                for w in ws]))
            both = per_launch(lambda: cl.zip(*[op for n in range(layers) for op in
                                               (touch(sink.partition_mut((1, 1)), ws[n]),
                                                L[n].make())]))
            res[f"{kind}/L2"] = {"touch_us": reads * 1e6, "gemv_after_touch_us":
                                 (both - reads) * 1e6, "touch_TB_s": ws[0].nbytes / reads / 1e12}
            print(kind, res[f"{kind}/L2"], flush=True)
        x = cl.randn((1, K), "bf16").sync()
        ref = (to_torch(ws[0]).float() @ to_torch(x).float().T).ravel()
        for occ, BM, BK, KS in SPLITK_TRIES:
            if (K // BK) % KS:
                continue
            S = K // BK // KS
            y = cl.zeros((S, N), "f32").sync()
            kern = splitk[occ]
            us = per_launch(lambda: cl.zip(*[kern(y.partition_mut((1, BM)), x, w, KS=KS, BK=BK)
                                             for w in ws])) * 1e6
            kern(y.partition_mut((1, BM)), x, ws[0], KS=KS, BK=BK).sync()
            rel = ((to_torch(y).sum(0) - ref).abs().max() / ref.abs().max()).item()
            assert rel < 1e-3, f"split-K {kind} BM={BM} BK={BK} KS={KS}: error {rel}"
            key = f"{kind}/splitk BM{BM} BK{BK} KS{KS} occ{occ}"
            res[key] = {"us": us, "instances": S * N // BM, "splits": S}
            print(key, res[key], flush=True)
    info = cl.device_info()
    out = {"device": info.name, "date": datetime.datetime.now(datetime.timezone.utc)
           .isoformat(timespec="seconds"), "results": res}
    Path(os.environ.get("OUT", "/tmp")).joinpath("probe-gemv-limits.json").write_text(
        json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
