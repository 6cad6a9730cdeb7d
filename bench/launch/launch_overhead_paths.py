"""The Python paths bench/launch/launch_overhead.py times against the C floor:
cubinrun's launcher (per launch and launch_n), cuda.bindings, cuda.core,
CuPy, Triton's own launcher and a torch eager op, each set up once and then
made into a Runner per kernel."""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Callable

from launch_overhead_cases import BLOCK, BUFFERS, CTYPES, CUBIN, Env, KernelCase, LaunchPath, \
    Runner, buffer_nbytes, c_value, check_same_bytes, is_pointer, numpy_scalar, per_launch, \
    python_args
from launch_overhead_floor import cu_result_error, setup_floor


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
        types = tuple(ctypes.c_void_p if is_pointer(p.type) else CTYPES[p.type]
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
