"""The typed C launcher: generated per signature, compiled and cached.

`load_launcher(leaf_types, num_scratch)` gives a module with `Config`,
`launch`, `launch_n`, `CudaCallError`, `DriverLoadError`, `SIGNATURE`,
`NUM_SCRATCH` and `ABI` (see template.c for the calling convention).
"""
from .build import build_launcher, load_launcher
from .codegen import LAUNCHER_ABI, generate_source, module_name_for

__all__ = ["LAUNCHER_ABI", "build_launcher", "generate_source", "load_launcher",
           "module_name_for"]
