"""Launching a kernel: arguments -> const generics, layouts, grid -> checked, compiled, launched.

One module per concern, in the order a launch needs them (none imports one after it):

- ``binding``: what a launch needs to know about a kernel (``KernelInfo``, once per kernel),
  the arguments bound to parameters, const generics from explicit values, partitions' tile
  shapes and shared tensors' dims, and the grid (with the persistent-schedule policy);
- ``checks``: the checks of each launch — moves (TL102), the checker's launch-level rules over
  ``ArgDesc``s of the real arguments, the in-flight borrows (TL104/TL105) through
  ``runtime.ownership``, the one borrow model;
- ``packing``: the calling-convention packing and the hand-over to the driver (a
  ``driver.RawLaunch`` through ctypes, ``cuda.core.launch`` while capturing a graph, for foreign
  memory, or wherever ctypes cannot be used);
- ``plan``: the entry of an argument layout (checked, specialized, packed) and the compiled,
  loaded specialization (``LaunchPlan``), cached per kernel and device architecture;
- ``op``: ``LaunchOp`` (the DeviceOp a kernel call builds) with the one path every start takes
  (``LaunchOp._enqueue``: arguments, start record, moves, entry, in-flight borrows, the
  backend's launch) and the public entry points ``launch_op`` / ``launch``;
- ``output``: ``OutputLaunchOp`` (a launch into a new output, allocated when it is enqueued)
  with its per-key ``OutputPlan`` and the entry point ``launch_into``.

Everything that talks to libcuda is in ``runtime.driver``; the simulator's side of a launch in
``runtime.sim``. The result of a launch hands ownership back: the tuple of its arguments,
partitions included.
"""
from cutile_lab.runtime.launch.binding import KernelInfo, kernel_info
from cutile_lab.runtime.launch.checks import MEASURE, STATS, arg_descs
from cutile_lab.runtime.launch.op import LaunchOp, launch, launch_op, set_kernel_adapter
from cutile_lab.runtime.launch.output import OutputLaunchOp, launch_into
from cutile_lab.runtime.launch.packing import pack_args
from cutile_lab.runtime.launch.plan import LaunchPlan

__all__ = ["LaunchOp", "OutputLaunchOp", "LaunchPlan", "KernelInfo", "kernel_info", "launch_op",
           "launch", "launch_into", "pack_args", "arg_descs", "set_kernel_adapter", "STATS",
           "MEASURE"]
