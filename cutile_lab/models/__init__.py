"""Whole models built from the kernel library: a stage above ``cutile_lab.kernels``.

Owns model architectures (configurations, weights from a checkpoint or random, the buffers and
the launches of one step, its CUDA graph) written only with the library's safe kernels and the
runtime. It may import ``cutile_lab.kernels``, the runtime and ``cutile_lab.kernel``; nothing in
the lab imports it.

    from cutile_lab.models.qwen3 import Qwen3
    model = Qwen3.random("Qwen3-4B", dtype="bf16", max_seq=1152)
    tokens = model.generate([[1, 2, 3]], 32)
"""
