"""Every CUDA driver call cubinrun makes from Python, through cuda.bindings.

All of them go through `call(name, *args)`, the one error check: it turns a
failing CUresult into a CudaError naming the call and the result (name and
description), and a missing libcuda into one line saying no driver was found.
Handles come back as plain ints where the launcher needs them (device
pointers, functions, streams).
"""
from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from typing import Any

from ..errors import CudaError, UsageError
from ..platform import WINDOWS

# CUresults with a clearer sentence than the driver's own description.
_PLAIN_WORDS = {
    "CUDA_ERROR_NO_DEVICE": "no CUDA-capable device is visible",
    "CUDA_ERROR_INSUFFICIENT_DRIVER": "the NVIDIA driver is older than this CUDA runtime needs",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "the binary holds no code this device can run",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the PTX is newer than this driver supports",
}


@functools.lru_cache(maxsize=None)
def _cuda():
    try:
        from cuda.bindings import driver
    except ImportError as e:            # a --no-deps install, or a broken environment
        raise CudaError(f"cuda-python is not importable ({e}): pip install 'cuda-python>=13,<14'",
                        call="import cuda.bindings") from None
    return driver


# The driver library the launchers open (template.c), unless $CUBINRUN_LIBCUDA
# names one, and where cuda-python looks for it.
LIBCUDA = "nvcuda.dll" if WINDOWS else "libcuda.so.1"
_DRIVER_SEARCH = "System32" if WINDOWS else "the library path (LD_LIBRARY_PATH)"


def _no_driver_error(name: str, exc: Exception) -> CudaError:
    """cuda-python found no driver. It looks for the driver library where the
    system keeps it whatever CUBINRUN_LIBCUDA says (that variable is the
    launchers'), so a user who set it is told which library was missing and why
    setting it did not help."""
    message = f"no NVIDIA driver found: {name} could not load {LIBCUDA} ({exc})"
    if override := os.environ.get("CUBINRUN_LIBCUDA"):
        message += (f"; CUBINRUN_LIBCUDA={override} sets only the library launchers open: "
                    f"cuda-python loads {LIBCUDA} from {_DRIVER_SEARCH}")
    return CudaError(message, call=name)


def launcher_driver_error(why: str) -> CudaError:
    """A launcher could not open the driver library or find its symbols in it
    (DriverLoadError, with dlerror's or Windows' text): named as
    CUBINRUN_LIBCUDA named it."""
    override = os.environ.get("CUBINRUN_LIBCUDA")
    library = f"{override} (CUBINRUN_LIBCUDA)" if override else LIBCUDA
    return CudaError(f"no NVIDIA driver found: the launcher could not load {library}: {why}",
                     call="LoadLibrary" if WINDOWS else "dlopen")


def result_name(code: int) -> tuple[str, str]:
    """(enum name, description) of a CUresult, without needing the driver."""
    cu = _cuda()
    try:
        enum = cu.CUresult(code)
    except ValueError:
        return f"CUresult {code}", "unknown error"
    name = enum.name
    try:
        err, text = cu.cuGetErrorString(enum)
        description = text.decode() if err == cu.CUresult.CUDA_SUCCESS and text else ""
    except RuntimeError:                      # no libcuda to ask
        description = ""
    return name, _PLAIN_WORDS.get(name, description)


def cuda_error(call_name: str, code: int, context: str = "") -> CudaError:
    name, description = result_name(int(code))
    detail = f"{name}: {description}" if description else name
    where = f" ({context})" if context else ""
    return CudaError(f"{call_name} failed{where}: {detail}", call=call_name,
                     result=int(code), result_name=name)


def call(name: str, *args, context: str = "") -> Any:
    """Call `cuda.bindings.driver.<name>(*args)`; return its values or raise CudaError."""
    cu = _cuda()
    try:
        result = getattr(cu, name)(*args)
    except RuntimeError as exc:               # cuda.pathfinder's DynamicLibNotFoundError
        if type(exc).__name__.startswith("DynamicLib"):
            raise _no_driver_error(name, exc) from None
        raise
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise cuda_error(name, int(err), context)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def enum(type_name: str, member: str):
    """A cuda.bindings enum member, e.g. enum("CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_...")."""
    return getattr(getattr(_cuda(), type_name), member)


# --- device and context ----------------------------------------------------


@dataclass(frozen=True)
class Device:
    ordinal: int
    handle: Any
    name: str
    capability: tuple[int, int]

    @property
    def arch(self) -> str:
        return f"sm_{self.capability[0]}{self.capability[1]}"


def init() -> int:
    """cuInit; returns the number of devices (CudaError when there are none)."""
    call("cuInit", 0)
    count = call("cuDeviceGetCount")
    if count == 0:
        raise CudaError("no CUDA-capable device is visible", call="cuDeviceGetCount")
    return count


def get_device(ordinal: int) -> Device:
    count = init()
    if not 0 <= ordinal < count:
        raise UsageError(f"--device {ordinal}: there {'is' if count == 1 else 'are'} {count} "
                         f"device{'s' if count != 1 else ''} (0..{count - 1})")
    handle = call("cuDeviceGet", ordinal)
    name = call("cuDeviceGetName", 256, handle).split(b"\0", 1)[0].decode()
    major = device_attribute(handle, "COMPUTE_CAPABILITY_MAJOR")
    minor = device_attribute(handle, "COMPUTE_CAPABILITY_MINOR")
    return Device(ordinal, handle, name, (major, minor))


def open_device(ordinal: int = 0) -> Device:
    """The device, with its primary context retained and made current."""
    device = get_device(ordinal)
    context = call("cuDevicePrimaryCtxRetain", device.handle)
    call("cuCtxSetCurrent", context)
    return device


class DeviceOpening:
    """The device being opened on a thread; `wait()` gives it.

    cuInit and retaining the primary context take ~0.25 s in the driver, which
    runs them without the GIL, so `launch` starts them first and reads the spec,
    the binary and the data meanwhile. `wait()` re-raises what the thread raised
    (no driver, a bad --device) and makes the context current on the calling
    thread, since a current context is per thread. `settle()` only waits: a
    process must not exit while the driver is mid-initialisation, or libcuda's
    exit handlers can meet a thread inside it.
    """

    def __init__(self, ordinal: int = 0):
        import threading
        self._outcome: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._open, args=(ordinal,), daemon=True,
                                        name="cubinrun-open-device")
        self._thread.start()

    def _open(self, ordinal: int) -> None:
        try:
            device = get_device(ordinal)
            self._outcome["opened"] = (device, call("cuDevicePrimaryCtxRetain", device.handle))
        except BaseException as exc:          # handed to the waiting thread
            self._outcome["error"] = exc

    def settle(self) -> None:
        self._thread.join()

    def wait(self) -> Device:
        self.settle()
        if "error" in self._outcome:
            raise self._outcome["error"]
        device, context = self._outcome["opened"]
        call("cuCtxSetCurrent", context)
        return device


def device_attribute(handle, attribute: str) -> int:
    return call("cuDeviceGetAttribute",
                enum("CUdevice_attribute", f"CU_DEVICE_ATTRIBUTE_{attribute}"), handle)


def device_total_memory(handle) -> int:
    return call("cuDeviceTotalMem", handle)


def device_pci_bus_id(handle) -> str:
    return call("cuDeviceGetPCIBusId", 64, handle).split(b"\0", 1)[0].decode()


def device_uuid(handle) -> str:
    """The device's UUID as nvidia-smi prints it (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx):
    what tells two cards of the same model apart, whatever the ordinals."""
    raw = bytes(call("cuDeviceGetUuid", handle).bytes)[:16].hex()
    return f"GPU-{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"


def driver_version() -> int:
    return call("cuDriverGetVersion")


def synchronize(context: str = "") -> None:
    call("cuCtxSynchronize", context=context)


# --- modules and functions -------------------------------------------------


def load_module(image: bytes, what: str = "module"):
    return call("cuModuleLoadData", image, context=what)


def get_function(module, name: str):
    return call("cuModuleGetFunction", module, name.encode(), context=f"kernel {name!r}")


def module_global(module, name: str) -> tuple[int, int]:
    """(address, bytes) of a `__constant__` / `__device__` symbol of `module`."""
    pointer, size = call("cuModuleGetGlobal", module, name.encode(), context=f"global {name!r}")
    return int(pointer), int(size)


def function_attribute(function, attribute: str) -> int:
    return call("cuFuncGetAttribute",
                enum("CUfunction_attribute", f"CU_FUNC_ATTRIBUTE_{attribute}"), function)


def set_function_attribute(function, attribute: str, value: int, context: str = "") -> None:
    call("cuFuncSetAttribute", function,
         enum("CUfunction_attribute", f"CU_FUNC_ATTRIBUTE_{attribute}"), value, context=context)


def launch_kernel(function, blocks: int, threads: int, args: list, stream: int,
                  context: str = "") -> None:
    """cuLaunchKernel of a 1-D grid; `args` are ctypes values (c_uint64, c_double,
    c_void_p, ...), one per parameter (cubinrun's own kernels: gpu/device_data.py)."""
    pointers = (ctypes.c_void_p * max(len(args), 1))(
        *[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    call("cuLaunchKernel", function, blocks, 1, 1, threads, 1, 1, 0, stream,
         ctypes.addressof(pointers), 0, context=context)


def current_capability() -> tuple[int, int]:
    """The compute capability of the current context's device."""
    device = call("cuCtxGetDevice")
    return (device_attribute(device, "COMPUTE_CAPABILITY_MAJOR"),
            device_attribute(device, "COMPUTE_CAPABILITY_MINOR"))


def copy_to_host_bytes(pointer: int, nbytes: int) -> bytes:
    """A few bytes of device memory (a check's counts), synchronously."""
    buffer = ctypes.create_string_buffer(max(nbytes, 1))
    if nbytes:
        call("cuMemcpyDtoH", ctypes.addressof(buffer), pointer, nbytes)
    return buffer.raw[:nbytes]


def handle_int(handle) -> int:
    """The address behind a cuda.bindings handle (what the C launcher takes)."""
    return int(handle)


# --- memory ----------------------------------------------------------------


def alloc(nbytes: int) -> int:
    """Device memory of at least one byte (cuMemAlloc refuses zero)."""
    return int(call("cuMemAlloc", max(nbytes, 1), context=f"{nbytes} bytes"))


def free(pointer: int) -> None:
    call("cuMemFree", pointer)


def free_quietly(pointer: int) -> None:
    """Free during cleanup: after a kernel fault the context refuses every call,
    and that second error must not hide the first."""
    try:
        free(pointer)
    except CudaError:
        pass


def copy_to_device(pointer: int, array) -> None:
    if array.nbytes:
        call("cuMemcpyHtoD", pointer, array.ctypes.data, array.nbytes)


def copy_to_host(array, pointer: int) -> None:
    if array.nbytes:
        call("cuMemcpyDtoH", array.ctypes.data, pointer, array.nbytes)


def memset_async(pointer: int, byte: int, nbytes: int, stream: int) -> None:
    call("cuMemsetD8Async", pointer, byte, nbytes, stream)


def fill_async(pointer: int, element: bytes, count: int, stream: int) -> None:
    """Write `count` copies of a 1, 2 or 4-byte element."""
    name = {1: "cuMemsetD8Async", 2: "cuMemsetD16Async", 4: "cuMemsetD32Async"}[len(element)]
    if count:
        call(name, pointer, int.from_bytes(element, "little"), count, stream)


def memory_info() -> tuple[int, int]:
    """(free, total) bytes of the current context's device."""
    free_bytes, total = call("cuMemGetInfo")
    return int(free_bytes), int(total)


def host_alloc(nbytes: int) -> int:
    """Page-locked host memory: the copy engines read and write it directly."""
    return int(call("cuMemHostAlloc", max(nbytes, 1), 0, context=f"{nbytes} bytes"))


def free_host(pointer: int) -> None:
    call("cuMemFreeHost", pointer)


def copy_to_device_async(pointer: int, host: int, nbytes: int, stream: int) -> None:
    if nbytes:
        call("cuMemcpyHtoDAsync", pointer, host, nbytes, stream)


def copy_to_host_async(host: int, pointer: int, nbytes: int, stream: int) -> None:
    if nbytes:
        call("cuMemcpyDtoHAsync", host, pointer, nbytes, stream)


def copy_on_device_async(dst: int, src: int, nbytes: int, stream: int) -> None:
    if nbytes:
        call("cuMemcpyDtoDAsync", dst, src, nbytes, stream)


# --- streams and events ----------------------------------------------------


def create_stream() -> int:
    return int(call("cuStreamCreate", enum("CUstream_flags", "CU_STREAM_NON_BLOCKING")))


def stream_synchronize(stream: int, context: str = "") -> None:
    call("cuStreamSynchronize", stream, context=context)


def destroy_stream(stream: int) -> None:
    call("cuStreamDestroy", stream)


def create_event(timing: bool = True):
    flag = "CU_EVENT_DEFAULT" if timing else "CU_EVENT_DISABLE_TIMING"
    return call("cuEventCreate", enum("CUevent_flags", flag))


def event_synchronize(event, context: str = "") -> None:
    call("cuEventSynchronize", event, context=context)


def record_event(event, stream: int) -> None:
    call("cuEventRecord", event, stream)


def elapsed_ms(start, end) -> float:
    return call("cuEventElapsedTime", start, end)


def destroy_event(event) -> None:
    call("cuEventDestroy", event)


# --- CUDA graphs (the graph timer) ------------------------------------------


def begin_capture(stream: int) -> None:
    """Launches queued on `stream` from this thread are recorded, not run, until
    end_capture (thread-local mode: other threads' CUDA calls are unaffected)."""
    call("cuStreamBeginCapture", stream,
         enum("CUstreamCaptureMode", "CU_STREAM_CAPTURE_MODE_THREAD_LOCAL"))


def end_capture(stream: int):
    """The graph of what was queued since begin_capture."""
    return call("cuStreamEndCapture", stream, context="graph capture")


def instantiate_graph(graph):
    return call("cuGraphInstantiate", graph, 0, context="graph of timed launches")


def launch_graph(graph_exec, stream: int) -> None:
    call("cuGraphLaunch", graph_exec, stream)


def destroy_graph(graph, graph_exec=None) -> None:
    if graph_exec is not None:
        call("cuGraphExecDestroy", graph_exec)
    call("cuGraphDestroy", graph)


# --- tensor maps -----------------------------------------------------------


def encode_tiled_tensor_map(data_type: int, address: int, dims: list[int],
                            strides_bytes: list[int], box: list[int], swizzle: int,
                            oob_nan: bool, context: str = "") -> bytes:
    """cuTensorMapEncodeTiled; dims/box innermost first, strides for dims 1.. in bytes.

    Returns the 128-byte CUtensorMap the kernel receives by value.
    """
    cu = _cuda()
    rank = len(dims)
    tensor_map = call(
        "cuTensorMapEncodeTiled", cu.CUtensorMapDataType(data_type), rank, address,
        [cu.cuuint64_t(d) for d in dims], [cu.cuuint64_t(s) for s in strides_bytes],
        [cu.cuuint32_t(b) for b in box], [cu.cuuint32_t(1)] * rank,
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        cu.CUtensorMapSwizzle(swizzle),
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        (cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA if oob_nan
         else cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        context=context)
    return ctypes.string_at(tensor_map.getPtr(), 128)
