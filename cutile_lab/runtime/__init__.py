"""The host runtime: devices, tensors, partitions, lazy device ops, launches and CUDA graphs.

Owns everything that runs work: the backend choice (GPU through cuda.core, or the CPU simulator),
device discovery, tensors and their interop protocols, partitions (moves and borrows), DeviceOps
(``then``/``sync``/``sync_on``/``await``), launching compiled kernels, borrow tracking of
in-flight work, and CUDA-graph capture and replay. It must not parse, check kernel bodies or
compile: it calls ``cutile_lab.compiling.driver.compile_kernel``, the launch-level rules of
``cutile_lab.checking.launch_rules`` and ``cutile_lab.simulation.simulate``.

    import cutile_lab as cl
    x = cl.randn(1000).sync(); y = cl.randn(1000).sync()
    z = cl.zeros(1000).sync()
    zp, x, y = add(z.partition(128), x, y).sync()      # grid (8,), ragged edge masked
    z = zp.unpartition()

Modules: ``backend`` (the gpu/sim choice and the ``Backend`` objects), ``gpu`` / ``sim`` (what
each backend does: start, allocate, launch, wait), ``device`` (GPU facts, context, streams), ``memory``
(storage and raw memory ops), ``dtypes`` / ``dlpack`` (host-boundary types, DLPack),
``tensor`` (Tensor), ``creation`` (zeros/.../asarray), ``partition``, ``ops`` (DeviceOp, Pending),
``ownership`` (moves and in-flight borrows), ``launch``, ``driver`` (everything that calls
libcuda through ctypes: the raw launch, events, stream queries, graph launch), ``graph``, ``sim``
(simulator bridge), ``callsite`` (the user's line for errors), ``foreign`` (CUDA C++
kernels and PyTorch work as DeviceOps).

Every public entry point works from any thread: ``device.gpu()`` makes the context current in
the calling thread once, streams and the memory pool are safe to share, and a launch's borrows
are published and checked under the ownership registry's lock.
"""
from cutile_lab.runtime.backend import backend, set_backend
from cutile_lab.runtime.creation import (arange, asarray, empty, from_numpy, full, ones, rand,
                                         randn, zeros)
from cutile_lab.runtime.device import (DeviceInfo, describe_device, device_info, gpu_available)
from cutile_lab.runtime.foreign import CudaKernel, cuda_kernel, torch_op
from cutile_lab.runtime.graph import Graph, graph
from cutile_lab.runtime.launch import LaunchOp, launch
from cutile_lab.runtime import gpu as _gpu, sim as _sim      # noqa: F401  (fill GPU and SIM in)
from cutile_lab.runtime.ops import DeviceOp, Pending, stream, synchronize, value, zip
from cutile_lab.runtime.ownership import OwnershipError
from cutile_lab.runtime.partition import Partition
from cutile_lab.runtime.tensor import Tensor

__all__ = ["backend", "set_backend", "arange", "asarray", "empty", "from_numpy", "full", "ones",
           "rand", "randn", "zeros", "DeviceInfo", "describe_device", "device_info",
           "gpu_available", "Graph", "graph", "LaunchOp", "launch", "DeviceOp", "Pending",
           "stream", "synchronize", "value", "zip", "OwnershipError", "Partition", "Tensor",
           "CudaKernel", "cuda_kernel", "torch_op"]
