"""The kernels bench/launch/launch_overhead.py launches, the argument values
every path passes them (and the bytes the kernel must receive), and what each
path provides the timing: a Runner per kernel, set up once per path."""
from __future__ import annotations

import contextlib
import ctypes
import struct
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

BLOCK = 32        # one warp per launch, grid (1, 1, 1)
N = 1024          # elements per buffer; the kernels touch none
CUBIN = Path(__file__).resolve().parents[2] / "kernels" / "build" / "empty.sm_90.cubin"


def log(message: str) -> None:
    print(message, flush=True)


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

STRUCT_FORMATS = {"i1": "B", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u8": "B",
                   "u16": "H", "u32": "I", "u64": "Q", "fp32": "f", "fp64": "d"}
CTYPES = {"i1": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
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
    return struct.pack("<" + STRUCT_FORMATS[p.type], p.value)


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
