#!/usr/bin/env python3
"""Launch overhead: host time per launch of an empty kernel, path by path.

Run on a GPU machine from the repository root (no install needed):

    PYTHONPATH=. python bench/launch_overhead.py            # full run
    PYTHONPATH=. python bench/launch_overhead.py --quick    # smoke run

For kernels/empty.cu's `empty3` (3 parameters) and `empty16` (16 mixed
parameters) it times loops of back-to-back launches, each loop ended by one
stream synchronise, and reports the median over rounds of loop time / n, in
microseconds and as a ratio to the C floor measured in the same run. Every
round runs every (kernel, path) pair once, in a shuffled order, so drift
(clocks, other tenants) spreads over all paths alike.

All paths launch on one non-blocking stream in the primary context of the
device, with the same buffers and the same scalar values:
  floor            C: fill a CUlaunchConfig, copy the arguments into their
                   storage, cuLaunchKernelEx (bench/launch_overhead_floor.c,
                   built here with the C compiler). One ctypes call per loop;
                   the time is taken in C with CLOCK_MONOTONIC.
  cubinrun.launch_n  one call that converts the arguments once and launches n
                   times in C (cubinrun's batched entry point).
  cubinrun.launch  cubinrun's generated launcher, one call per launch.
  cuda.bindings    cuLaunchKernel with kernelParams as ((values), (ctypes types)).
  cuda.core        launch(stream, LaunchConfig, Kernel, *args); NumPy scalars.
  cupy             RawModule(path=cubin).get_function(name)(grid, block, args).
  triton           Triton's own launcher, called as CompiledKernel.run is called
                   by JITFunction.run: CudaLauncher.__call__ and its C launch(),
                   for a Triton-compiled empty kernel of the same signature (it
                   has Triton's two trailing scratch pointers too). The JIT's
                   argument binding and cache lookup are not timed. A negative
                   i8 goes as its two's-complement byte: Triton's launcher
                   refuses negative i8 values.
  torch            x.add_(1.0) on a one-element CUDA tensor: an eager op, for
                   scale; it is not the empty kernel.
A path whose library is missing or fails is reported with its error; the
others go on. Exit status 1 when the device cannot be set up or the floor or a
cubinrun path has no numbers, else 0. --timeout (540 s) dumps the stacks and
exits rather than hang.

Results: a table last on stdout, and the full record as JSON in
$OUT/launch_overhead.json when OUT is set, else bench/results/launch_overhead.json.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import datetime
import faulthandler
import gc
import json
import os
import platform
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
if str(REPO) not in sys.path:  # `python bench/launch_overhead.py` works without PYTHONPATH too
    sys.path.insert(0, str(REPO))

CUBIN = REPO / "kernels" / "build" / "empty.sm_90.cubin"
FLOOR_SOURCE = BENCH / "launch_overhead_floor.c"
BLOCK = 32        # one warp per launch, grid (1, 1, 1)
N = 1024          # elements per buffer; the kernels touch none

# --- the kernels and their argument values ---------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    type: str     # cubinrun leaf type (Triton's vocabulary)
    value: Any    # a buffer name for a pointer, else the number passed


@dataclass(frozen=True)
class KernelCase:
    name: str
    which: int    # the floor's selector
    params: tuple[Param, ...]

    @property
    def label(self) -> str:
        return f"{len(self.params)} params"


# Element type and count of each buffer, shared by every path.
BUFFERS = {"a": ("float32", N), "b": ("float32", N), "idx": ("int32", N), "acc": ("float64", N)}
_ITEMSIZES = {"float32": 4, "int32": 4, "float64": 8}


def buffer_nbytes(name: str) -> int:
    dtype, count = BUFFERS[name]
    return count * _ITEMSIZES[dtype]

# The signatures of kernels/empty.cu (configs/empty3.yaml, configs/empty16.yaml).
EMPTY3 = KernelCase("empty3", 3, (
    Param("x", "*fp32", "a"), Param("y", "*fp32", "b"), Param("n", "i32", N)))
EMPTY16 = KernelCase("empty16", 16, (
    Param("a_ptr", "*fp32", "a"), Param("b_ptr", "*kfp32", "b"), Param("n", "i32", N),
    Param("offset", "i64", -5000000000), Param("alpha", "fp32", 0.5), Param("beta", "fp64", 2.0),
    Param("flags", "u8", 255), Param("scale_fp16", "fp16", 0.125), Param("idx_ptr", "*i32", "idx"),
    Param("mask", "u32", 4294967295), Param("is_last", "i1", 1), Param("stride", "i16", -3),
    Param("seed", "u64", 12345678901234567890), Param("scale_bf16", "bf16", 1.5),
    Param("shift", "i8", -7), Param("acc_ptr", "*fp64", "acc")))
KERNELS = (EMPTY3, EMPTY16)

_STRUCT_FORMATS = {"i1": "B", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u8": "B",
                   "u16": "H", "u32": "I", "u64": "Q", "fp32": "f", "fp64": "d"}
_CTYPES = {"i1": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
           "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp16": ctypes.c_uint16,
           "bf16": ctypes.c_uint16, "fp32": ctypes.c_float, "fp64": ctypes.c_double}


def is_pointer(type_: str) -> bool:
    return type_.startswith("*")


def fp16_bits(x: float) -> int:
    return struct.unpack("<H", struct.pack("<e", x))[0]


def bf16_bits(x: float) -> int:
    """Round to nearest even from the float32 bits (the values used here are exact)."""
    (bits,) = struct.unpack("<I", struct.pack("<f", x))
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


def c_value(p: Param, buffers: dict[str, int]) -> int | float:
    """The value as C storage holds it: an address, raw 16-bit float bits, or the number."""
    if is_pointer(p.type):
        return buffers[p.value]
    if p.type == "fp16":
        return fp16_bits(p.value)
    if p.type == "bf16":
        return bf16_bits(p.value)
    return p.value


def param_bytes(p: Param, buffers: dict[str, int]) -> bytes:
    """The bytes the kernel receives for one parameter."""
    if is_pointer(p.type):
        return struct.pack("<Q", buffers[p.value])
    if p.type in ("fp16", "bf16"):
        return struct.pack("<H", c_value(p, buffers))
    return struct.pack("<" + _STRUCT_FORMATS[p.type], p.value)


def check_same_bytes(path: str, case: KernelCase, buffers: dict[str, int],
                     produced: list[bytes | None]) -> None:
    """Refuse a path whose converted arguments differ from the kernel's bytes (None: not checked)."""
    for p, got in zip(case.params, produced, strict=True):
        if got is not None and got != param_bytes(p, buffers):
            raise ValueError(f"{path}: argument {p.name} ({p.type}) converts to {got.hex()}, "
                             f"expected {param_bytes(p, buffers).hex()}")


def python_args(case: KernelCase, buffers: dict[str, int]) -> tuple:
    """Plain Python values: ints for pointers, numbers as written (cubinrun, Triton)."""
    return tuple(buffers[p.value] if is_pointer(p.type) else p.value for p in case.params)


def numpy_scalar(p: Param):
    """The NumPy scalar of a parameter's exact type (bf16, which NumPy lacks, as its bits)."""
    import numpy as np
    if p.type == "bf16":
        return np.uint16(bf16_bits(p.value))
    # Named types: np.dtype("q").type is np.longlong, which cuda.core does not take as int64.
    types = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
             "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
             "fp16": np.float16, "fp32": np.float32, "fp64": np.float64}
    return types[p.type](p.value)


# --- what every path provides ----------------------------------------------


@dataclass
class Env:
    """What the paths share: device, stream, buffers, the cubin and its functions."""
    device: Any                # cubinrun.driver.Device
    stream: int                # a non-blocking CUstream in the primary context
    buffers: dict[str, int]    # buffer name -> device address
    cubin: bytes
    functions: dict[str, Any]  # kernel name -> CUfunction (cuda.bindings), loaded by cubinrun
    sync: Callable[[], None]   # cuStreamSynchronize(stream), the same for every path


@dataclass
class Runner:
    """One path for one kernel: `loop(n)` launches n times without synchronising."""
    loop: Callable[[int], Any]
    check: Callable[[Any], None] = lambda result: None  # raises if loop's result says it failed
    scope: Callable[[], AbstractContextManager] = contextlib.nullcontext  # around the timing
    self_timed: bool = False   # loop(n) returns the seconds it measured itself


def per_launch(fn: Callable, args: tuple) -> Callable[[int], Any]:
    """The loop every per-launch Python path shares, so its overhead is the same for all."""
    def loop(n: int):
        result = None
        for _ in range(n):
            result = fn(*args)
        return result
    return loop


@dataclass(frozen=True)
class LaunchPath:
    key: str
    label: str
    what: str     # what one timed launch consists of (goes into the JSON)
    setup: Callable[[Env], Callable[[KernelCase], Runner]]  # once; then one Runner per kernel


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
        setter.argtypes = [ctypes.c_uint64 if is_pointer(p.type) else _CTYPES[p.type]
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


# --- the Python paths ----------------------------------------------------------


def cubinrun_runner_args(env: Env, case: KernelCase):
    from cubinrun.gpu.driver import handle_int
    from cubinrun.launcher import load_launcher
    module = load_launcher([p.type for p in case.params], num_scratch=0)
    config = module.Config(function=handle_int(env.functions[case.name]), block=(BLOCK, 1, 1),
                           shared=0)
    return module, (config, 1, 1, 1, env.stream, *python_args(case, env.buffers))


def setup_cubinrun_launch(env: Env) -> Callable[[KernelCase], Runner]:
    def make(case: KernelCase) -> Runner:
        module, args = cubinrun_runner_args(env, case)
        return Runner(loop=per_launch(module.launch, args))
    return make


def setup_cubinrun_launch_n(env: Env) -> Callable[[KernelCase], Runner]:
    def make(case: KernelCase) -> Runner:
        module, args = cubinrun_runner_args(env, case)
        launch_n = module.launch_n
        return Runner(loop=lambda n: launch_n(n, *args))
    return make


def setup_cuda_bindings(env: Env) -> Callable[[KernelCase], Runner]:
    from cuda.bindings import driver as cu
    stream = cu.CUstream(env.stream)

    def check(result) -> None:
        err = result[0] if isinstance(result, tuple) else result
        if err != cu.CUresult.CUDA_SUCCESS:
            raise cu_result_error("cuLaunchKernel", int(err))

    def make(case: KernelCase) -> Runner:
        # The documented form: values and ctypes types; pointers as ints typed c_void_p.
        values = tuple(c_value(p, env.buffers) for p in case.params)
        types = tuple(ctypes.c_void_p if is_pointer(p.type) else _CTYPES[p.type]
                      for p in case.params)
        check_same_bytes("cuda.bindings", case, env.buffers,
                         [struct.pack("<Q", v) if t is ctypes.c_void_p else bytes(t(v))
                          for v, t in zip(values, types)])
        args = (env.functions[case.name], 1, 1, 1, BLOCK, 1, 1, 0, stream, (values, types), 0)
        return Runner(loop=per_launch(cu.cuLaunchKernel, args), check=check)
    return make


class _ForeignStream:
    """Hands our CUstream to cuda.core through the __cuda_stream__ protocol."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def setup_cuda_core(env: Env) -> Callable[[KernelCase], Runner]:
    try:
        from cuda.core import Device, LaunchConfig, ObjectCode, launch
    except ImportError:  # older cuda.core kept its API under cuda.core.experimental
        from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch
    device = Device(env.device.ordinal)
    device.set_current()  # the primary context, already current: cuda.core's own bookkeeping
    stream = device.create_stream(_ForeignStream(env.stream))
    config = LaunchConfig(grid=1, block=BLOCK)
    code = ObjectCode.from_cubin(env.cubin)

    def make(case: KernelCase) -> Runner:
        kernel = code.get_kernel(case.name)
        # A Python int is a pointer to cuda.core; every scalar goes as its exact NumPy type.
        kernel_args = tuple(env.buffers[p.value] if is_pointer(p.type) else numpy_scalar(p)
                            for p in case.params)
        check_same_bytes("cuda.core", case, env.buffers,
                         [None if is_pointer(p.type) else a.tobytes()
                          for p, a in zip(case.params, kernel_args)])
        return Runner(loop=per_launch(launch, (stream, config, kernel, *kernel_args)))
    return make


def setup_cupy(env: Env) -> Callable[[KernelCase], Runner]:
    import cupy
    import numpy as np
    cupy.cuda.Device(env.device.ordinal).use()
    module = cupy.RawModule(path=str(CUBIN))
    stream = cupy.cuda.ExternalStream(env.stream)
    arrays = {}
    for name, (dtype, count) in BUFFERS.items():
        memory = cupy.cuda.UnownedMemory(env.buffers[name], buffer_nbytes(name), env,
                                         device_id=env.device.ordinal)
        arrays[name] = cupy.ndarray((count,), np.dtype(dtype), cupy.cuda.MemoryPointer(memory, 0))

    def make(case: KernelCase) -> Runner:
        kernel = module.get_function(case.name)
        kernel_args = tuple(arrays[p.value] if is_pointer(p.type) else numpy_scalar(p)
                            for p in case.params)
        check_same_bytes("cupy", case, env.buffers,
                         [struct.pack("<Q", a.data.ptr) if is_pointer(p.type) else a.tobytes()
                          for p, a in zip(case.params, kernel_args)])
        return Runner(loop=per_launch(kernel, ((1,), (BLOCK,), kernel_args)),
                      scope=lambda: stream)  # CuPy launches on its current stream
    return make


def _triton_kernels() -> dict[str, Any]:
    """Empty Triton kernels with the parameters of kernels/empty.cu."""
    import triton

    @triton.jit
    def empty3(x, y, n):
        pass

    @triton.jit
    def empty16(a_ptr, b_ptr, n, offset, alpha, beta, flags, scale_fp16, idx_ptr, mask,
                is_last, stride, seed, scale_bf16, shift, acc_ptr):
        pass

    return {"empty3": empty3, "empty16": empty16}


def triton_args(case: KernelCase, buffers: dict[str, int]) -> tuple:
    """python_args, but a negative i8 as its two's-complement byte: Triton 3.6's launcher
    parses i8 with PyArg format "b", which refuses negative numbers (OverflowError)."""
    return tuple(value & 0xFF if p.type == "i8" and value < 0 else value
                 for p, value in zip(case.params, python_args(case, buffers), strict=True))


def setup_triton(env: Env) -> Callable[[KernelCase], Runner]:
    import triton
    from triton.compiler import ASTSource
    try:
        from triton import knobs  # 3.4+: where JITFunction.run reads the launch hooks
        enter_hook, exit_hook = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    except ImportError:
        enter_hook = exit_hook = None
    kernels = _triton_kernels()

    def make(case: KernelCase) -> Runner:
        signature = {p.name: p.type.replace("*k", "*") for p in case.params}
        compiled = triton.compile(ASTSource(kernels[case.name], signature),
                                  options={"num_warps": BLOCK // 32})
        compiled._init_handles()  # Triton's own load_binary and CudaLauncher
        # The call JITFunction.run makes once the kernel is found in its cache;
        # launch_metadata is None when no enter hook is set.
        args = (1, 1, 1, env.stream, compiled.function, compiled.packed_metadata, None,
                enter_hook, exit_hook, *triton_args(case, env.buffers))
        return Runner(loop=per_launch(compiled.run, args))
    return make


def setup_torch(env: Env) -> Callable[[KernelCase], Runner]:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    device = torch.device("cuda", env.device.ordinal)
    x = torch.zeros(1, device=device)
    torch.cuda.synchronize(device)
    stream = torch.cuda.ExternalStream(env.stream, device=device)

    def make(case: KernelCase) -> Runner:
        return Runner(loop=per_launch(x.add_, (1.0,)), scope=lambda: torch.cuda.stream(stream))
    return make


PATHS = (
    LaunchPath("floor", "C cuLaunchKernelEx loop (floor)",
               "C: fill CUlaunchConfig, copy the arguments, cuLaunchKernelEx; timed in C, "
               "one ctypes call per loop", setup_floor),
    LaunchPath("cubinrun.launch_n", "cubinrun launch_n (per launch)",
               "mod.launch_n(n, config, 1, 1, 1, stream, *args): arguments converted once, "
               "n cuLaunchKernelEx in C", setup_cubinrun_launch_n),
    LaunchPath("cubinrun.launch", "cubinrun launch",
               "mod.launch(config, 1, 1, 1, stream, *args) per launch", setup_cubinrun_launch),
    LaunchPath("cuda.bindings", "cuda.bindings cuLaunchKernel",
               "cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, CUstream, ((values), (ctypes types)), 0)",
               setup_cuda_bindings),
    LaunchPath("cuda.core", "cuda.core launch",
               "launch(Stream, LaunchConfig, Kernel, *args): int pointers, NumPy scalars",
               setup_cuda_core),
    LaunchPath("cupy", "CuPy RawModule function",
               "RawModule(path=cubin).get_function(name)((1,), (32,), args) on an ExternalStream: "
               "CuPy arrays, NumPy scalars", setup_cupy),
    LaunchPath("triton", "Triton CudaLauncher (3.x)",
               "CompiledKernel.run(1, 1, 1, stream, function, packed_metadata, None, hooks, *args) "
               "of a Triton-compiled empty kernel (JIT dispatch not timed)", setup_triton),
    LaunchPath("torch", "torch x.add_(1.0), 1 element",
               "x.add_(1.0) on a one-element CUDA tensor, on an ExternalStream (not the empty "
               "kernel)", setup_torch),
)
REQUIRED = ("floor", "cubinrun.launch_n", "cubinrun.launch")  # a failure here fails the run

# --- measuring -------------------------------------------------------------------


@dataclass
class Result:
    path: LaunchPath
    runners: dict[str, Runner] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)   # kernel name -> why it has no numbers
    samples_us: dict[str, list[float]] = field(default_factory=dict)  # per launch, per round
    wall_us: dict[str, list[float]] = field(default_factory=dict)     # as seen from Python

    @property
    def status(self) -> str:
        """ok (every kernel measured), partial, or failed (no numbers)."""
        if not self.samples_us:
            return "failed"
        return "partial" if self.errors else "ok"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def time_loop(runner: Runner, n: int, sync: Callable[[], None]) -> tuple[float, float]:
    """(us per launch, us per launch seen from Python) for one loop of n launches."""
    with runner.scope():
        gc.disable()
        try:
            start = time.perf_counter_ns()
            result = runner.loop(n)
            sync()
            wall = (time.perf_counter_ns() - start) / 1e3 / n
        finally:
            gc.enable()
    runner.check(result)
    return (result * 1e6 / n if runner.self_timed else wall), wall


def log(message: str) -> None:
    print(message, flush=True)


def open_env() -> Env:
    from cubinrun.gpu import driver
    if not CUBIN.is_file():
        raise FileNotFoundError(f"{CUBIN} is missing (kernels/build.sh builds it)")
    device = driver.open_device(0)
    cubin = CUBIN.read_bytes()
    module = driver.load_module(cubin, what=str(CUBIN.name))
    functions = {case.name: driver.get_function(module, case.name) for case in KERNELS}
    buffers = {name: driver.alloc(buffer_nbytes(name)) for name in BUFFERS}
    stream = driver.create_stream()
    return Env(device, stream, buffers, cubin, functions,
               sync=lambda: driver.stream_synchronize(stream))


def set_up(paths: list[LaunchPath], env: Env) -> list[Result]:
    """A Result per path; a missing or broken library is reported and the others go on."""
    results = []
    for path in paths:
        result = Result(path)
        results.append(result)
        try:
            make = path.setup(env)
        except Exception as exc:
            result.errors = {case.name: one_line(exc) for case in KERNELS}
            log(f"  skip   {path.key}: {one_line(exc)}")
            continue
        for case in KERNELS:
            try:
                result.runners[case.name] = make(case)
            except Exception as exc:
                result.errors[case.name] = one_line(exc)
                log(f"  skip   {path.key} {case.name}: {one_line(exc)}")
        if result.runners:
            log(f"  ready  {path.key} ({', '.join(result.runners)})")
    return results


def fail(result: Result, case: KernelCase, exc: BaseException) -> None:
    """Drop the kernel from this path, numbers included: they would be from fewer rounds."""
    result.errors[case.name] = one_line(exc)
    result.runners.pop(case.name, None)
    result.samples_us.pop(case.name, None)
    result.wall_us.pop(case.name, None)
    log(f"  FAILED {result.path.key} {case.name}: {one_line(exc)}")


def warm_up(results: list[Result], env: Env, n: int) -> None:
    for result in results:
        for case in KERNELS:
            runner = result.runners.get(case.name)
            if runner is None:
                continue
            try:
                for _ in range(2):
                    time_loop(runner, n, env.sync)
            except Exception as exc:
                fail(result, case, exc)


def measure(results: list[Result], env: Env, rounds: int, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for r in range(rounds):
        started = time.perf_counter()
        order = [(result, case) for result in results for case in KERNELS
                 if case.name in result.runners]
        rng.shuffle(order)
        for result, case in order:
            runner = result.runners.get(case.name)
            if runner is None:  # failed earlier in this round
                continue
            try:
                per_launch_us, wall_us = time_loop(runner, n, env.sync)
            except Exception as exc:
                fail(result, case, exc)
                continue
            result.samples_us.setdefault(case.name, []).append(per_launch_us)
            result.wall_us.setdefault(case.name, []).append(wall_us)
        log(f"  round {r + 1}/{rounds} done in {time.perf_counter() - started:.2f} s")


# --- reporting -------------------------------------------------------------------


def medians(results: list[Result]) -> dict[str, dict[str, float]]:
    return {result.path.key: {name: statistics.median(samples)
                              for name, samples in result.samples_us.items()}
            for result in results}


def versions() -> dict[str, str]:
    from importlib import metadata
    found = {"python": platform.python_version()}
    for dist in ("cuda-bindings", "cuda-core", "cupy-cuda13x", "cupy-cuda12x", "cupy", "torch",
                 "triton", "numpy"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    with contextlib.suppress(Exception):
        compiler = compiler_command()
        done = subprocess.run([*compiler, "--version"], capture_output=True, text=True, timeout=10)
        found["cc"] = done.stdout.splitlines()[0] if done.stdout else compiler[0]
    return found


def driver_version() -> str:
    with contextlib.suppress(Exception):
        from cubinrun.gpu import driver
        v = driver.driver_version()
        return f"{v // 1000}.{v % 1000 // 10}"
    return "unknown"


def record(results: list[Result], env: Env, args, started: str) -> dict:
    table = medians(results)
    floor = table.get("floor", {})
    paths = []
    for result in results:
        kernels = {}
        for case in KERNELS:
            samples = result.samples_us.get(case.name)
            if not samples:
                continue
            median = statistics.median(samples)
            kernels[case.name] = {
                "median_us": median, "min_us": min(samples), "max_us": max(samples),
                "ratio_to_floor": median / floor[case.name] if case.name in floor else None,
                "median_wall_us": statistics.median(result.wall_us[case.name]),
                "samples_us": samples,
            }
        paths.append({"key": result.path.key, "label": result.path.label,
                      "what": result.path.what, "status": result.status, "errors": result.errors, "kernels": kernels})
    return {
        "benchmark": "launch_overhead",
        "date": started,
        "host": platform.node(),
        "gpu": env.device.name,
        "driver": driver_version(),
        "versions": versions(),
        "rounds": args.rounds,
        "launches_per_loop": args.launches,
        "seed": args.seed,
        "block": [BLOCK, 1, 1],
        "grid": [1, 1, 1],
        "kernels": {case.name: [f"{p.name}: {p.type} = {p.value}" for p in case.params]
                    for case in KERNELS},
        "paths": paths,
    }


def format_table(doc: dict) -> str:
    by_key = {p["key"]: p for p in doc["paths"]}

    def cells(path: dict, case: KernelCase) -> tuple[str, str]:
        k = path["kernels"].get(case.name)
        if k is None:
            return "-", "-"
        ratio = k["ratio_to_floor"]
        return f"{k['median_us']:.2f}", ("-" if ratio is None else f"{ratio:.2f}")

    width = max(len(p.label) for p in PATHS)
    versions_text = ", ".join(f"{k} {v}" for k, v in doc["versions"].items())
    lines = [
        f"launch overhead: median host time per launch over {doc['rounds']} rounds of "
        f"{doc['launches_per_loop']} launches; ratio: to the C floor of this run",
        f"{doc['date']}  {doc['gpu']}  driver {doc['driver']}",
        versions_text,
        f"{'path':<{width}} | 3 params us | ratio | 16 params us | ratio",
        f"{'-' * width}-|-------------|-------|--------------|------",
    ]
    notes = []
    for path in PATHS:
        entry = by_key.get(path.key)
        if entry is None:
            continue
        if not entry["kernels"]:
            first_error = next(iter(entry["errors"].values()), "no numbers")
            lines.append(f"{path.label:<{width}} | not run: {first_error[:72]}")
            continue
        us3, r3 = cells(entry, EMPTY3)
        us16, r16 = cells(entry, EMPTY16)
        lines.append(f"{path.label:<{width}} | {us3:>11} | {r3:>5} | {us16:>12} | {r16:>5}")
        notes += [f"  {path.key} {name}: {error}" for name, error in entry["errors"].items()]
    if notes:
        lines += ["not measured:", *notes]
    return "\n".join(lines)


def json_path(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    if out := os.environ.get("OUT"):
        return Path(out) / "launch_overhead.json"
    return BENCH / "results" / "launch_overhead.json"


# --- main ---------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Host time per launch of an empty kernel (3 and 16 parameters) through "
                    "a C floor, cubinrun, cuda.bindings, cuda.core, CuPy, Triton and torch.")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 3 rounds of 200 launches")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 15; quick 3)")
    parser.add_argument("--launches", type=int, default=None,
                        help="launches per timed loop (default 2000; quick 200)")
    parser.add_argument("--only", default=None,
                        help="comma-separated path keys to run (default all): "
                             + ", ".join(p.key for p in PATHS))
    parser.add_argument("--seed", type=int, default=0, help="seed of the per-round shuffle")
    parser.add_argument("--json", default=None,
                        help="where to write the JSON (default $OUT/launch_overhead.json, "
                             "else bench/results/launch_overhead.json)")
    parser.add_argument("--timeout", type=float, default=540.0,
                        help="seconds before the run dumps its stacks and exits (default 540)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 15)
    args.launches = args.launches or (200 if args.quick else 2000)
    if args.rounds < 1 or args.launches < 1:
        parser.error("--rounds and --launches must be at least 1")
    known = {p.key for p in PATHS}
    if args.only:
        wanted = {key.strip() for key in args.only.split(",")}
        if unknown := wanted - known:
            parser.error(f"--only: unknown path(s) {', '.join(sorted(unknown))}")
        args.only = wanted
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A stuck driver call must not hang the run: dump every stack and exit instead.
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    log(f"launch_overhead: {args.rounds} rounds x {args.launches} launches"
        f"{' (quick)' if args.quick else ''}")
    try:
        env = open_env()
    except Exception as exc:
        log(f"error: cannot set up the device: {one_line(exc)}")
        return 1
    log(f"device 0: {env.device.name} ({env.device.arch}); stream {env.stream:#x}")

    paths = [p for p in PATHS if not args.only or p.key in args.only]
    log("setting up paths")
    results = set_up(paths, env)
    log("warming up")
    warm_up(results, env, args.launches)
    log("measuring")
    measure(results, env, args.rounds, args.launches, args.seed)

    doc = record(results, env, args, started)
    destination = json_path(args.json)
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(json.dumps(doc, indent=2) + "\n")
    log(f"wrote {destination}")
    print(format_table(doc), flush=True)
    faulthandler.cancel_dump_traceback_later()
    bad = [r.path.key for r in results if r.path.key in REQUIRED and r.status != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
