"""The floor of bench/launch/launch_overhead.py: launch_overhead_floor.c built
with the launchers' C compiler into a shared library, loaded through ctypes,
told the stream, the kernels and their argument values, and timed in C."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from launch_overhead_cases import BLOCK, CTYPES, KERNELS, Env, KernelCase, Runner, c_value, \
    is_pointer, log

FLOOR_SOURCE = Path(__file__).with_name("launch_overhead_floor.c")


# --- the C floor -------------------------------------------------------------


def cuda_include_dir() -> str:
    """cuda.h's folder: cubinrun's search (cuda.pathfinder, CUDA_HOME), then /usr/local/cuda."""
    from cubinrun.errors import BuildError
    from cubinrun.launcher.build import find_cuda_include
    try:
        return find_cuda_include()
    except BuildError:
        if os.path.isfile("/usr/local/cuda/include/cuda.h"):
            return "/usr/local/cuda/include"
        raise


def compiler_command() -> list[str]:
    """The launchers' C compiler as a command (find_compiler gives a list of
    words, or a Compiler whose .command they are where compilers.py exists)."""
    from cubinrun.launcher.build import find_compiler
    compiler = find_compiler()
    return list(getattr(compiler, "command", compiler))


def build_floor(workdir: str) -> ctypes.CDLL:
    """Compile launch_overhead_floor.c into a shared library and load it."""
    library = os.path.join(workdir, "launch_overhead_floor.so")
    command = [*compiler_command(), "-O2", "-shared", "-fPIC", f"-I{cuda_include_dir()}",
               str(FLOOR_SOURCE), "-o", library, "-ldl"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        log(f"{' '.join(command)}\n{done.stderr}")
        raise RuntimeError(f"compiling {FLOOR_SOURCE.name} failed (exit {done.returncode}; "
                           "the compiler's output is above)")
    lib = ctypes.CDLL(library)
    lib.floor_error.restype = ctypes.c_char_p
    lib.floor_open.argtypes = [ctypes.c_char_p]
    lib.floor_open.restype = ctypes.c_int
    lib.floor_load.argtypes = [ctypes.c_char_p]
    lib.floor_load.restype = ctypes.c_int
    lib.floor_set_launch.argtypes = [ctypes.c_uint64, ctypes.c_uint]
    lib.floor_set_launch.restype = None
    for case in KERNELS:
        setter = getattr(lib, f"floor_set_{case.name}")
        setter.argtypes = [ctypes.c_uint64 if is_pointer(p.type) else CTYPES[p.type]
                           for p in case.params]
        setter.restype = None
    lib.launch_loop.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.launch_loop.restype = ctypes.c_double
    return lib


def cu_result_error(call: str, code: int) -> RuntimeError:
    from cubinrun.gpu.driver import result_name
    name, description = result_name(code)
    return RuntimeError(f"{call}: {name}" + (f" ({description})" if description else ""))


def setup_floor(env: Env) -> Callable[[KernelCase], Runner]:
    workdir = tempfile.mkdtemp(prefix="launch_overhead_")
    try:
        lib = build_floor(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # the loaded library stays mapped
    if lib.floor_open(b"libcuda.so.1") != 0:
        raise RuntimeError(f"floor: cannot open the driver: {lib.floor_error().decode()}")
    if (code := lib.floor_load(env.cubin)) != 0:
        raise cu_result_error("floor: cuModuleLoadData/cuModuleGetFunction", code)
    lib.floor_set_launch(env.stream, BLOCK)
    for case in KERNELS:
        getattr(lib, f"floor_set_{case.name}")(*(c_value(p, env.buffers) for p in case.params))

    def check(seconds: float) -> None:
        if seconds < 0:
            raise cu_result_error("floor: cuLaunchKernelEx/cuStreamSynchronize", int(-seconds))

    def make(case: KernelCase) -> Runner:
        return Runner(loop=lambda n: lib.launch_loop(case.which, n), check=check,
                      self_timed=True)
    return make
