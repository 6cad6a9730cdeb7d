"""The fake device: answers cuda.bindings driver calls by name, in-process,
as an H200 would (device memory is host memory). Tests put it in place of
`cubinrun.gpu.driver.call`; worker processes install it through `worker.install`.

Faults, for the multi-run tests: a kernel named in `sticky_kernels` poisons
the context at the next synchronise (as an illegal address does: every later
call fails the same way, until cuDevicePrimaryCtxReset), and one named in
`crash_kernels` kills the process when it is loaded. A module whose image
holds `sticky_marker` (bytes appended to a copy of a cubin) faults like a
sticky kernel: for sweeps where only some points' binaries fault.

Several devices, for the scale-out tests: $FAKECUDA_DEVICES=N gives N of them
(named by $FAKECUDA_NAMES, comma-separated, the last name repeated), and then
$CUDA_VISIBLE_DEVICES selects among them by index as it does for a real
driver, so each worker process sees its own one, with its own UUID. Without
$FAKECUDA_DEVICES there is one "Fake H200" whatever the environment says.
"""
from __future__ import annotations

import ctypes
import itertools
import os
import signal
from typing import Callable

import numpy as np

from cubinrun.gpu import driver

CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_NOT_FOUND = 500


class FakeUuid:
    """What cuda.bindings returns for cuDeviceGetUuid: a CUuuid with `.bytes`."""

    def __init__(self, raw: bytes):
        self.bytes = raw


def visible_devices() -> list[int]:
    """The physical indices this process sees, in order."""
    count = os.environ.get("FAKECUDA_DEVICES")
    if count is None:
        return [0]
    physical = range(int(count))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return list(physical)
    chosen = []
    for entry in visible.split(","):
        if not entry.strip().isdigit() or int(entry) not in physical:
            break                           # as CUDA does: the list ends at the first bad entry
        chosen.append(int(entry))
    return chosen


def device_name(index: int) -> str:
    names = os.environ.get("FAKECUDA_NAMES", "Fake H200").split(",")
    return names[min(index, len(names) - 1)]


class FakeDevice:
    """Answers cuda.bindings driver calls by name, like an H200 would.

    Its clock: an event pair reads EVENT_OFFSET_US plus KERNEL_US for every
    launch the fake libcuda took between the two records, like a real pair
    around back-to-back launches (bench/timing/event_offset.py), less GRAPH_HIDDEN_US
    for each of them replayed from a graph, which starts a kernel while the one
    before it drains (gpu/timers/graph.py)."""

    ATTRIBUTES = {"COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
                  "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448, "MULTIPROCESSOR_COUNT": 132,
                  "L2_CACHE_SIZE": 1 << 20, "CLOCK_RATE": 1980000,
                  "MEMORY_CLOCK_RATE": 3201000, "GLOBAL_MEMORY_BUS_WIDTH": 6144}

    EVENT_OFFSET_US = 2.0
    KERNEL_US = 3.0
    GRAPH_HIDDEN_US = 0.9
    TOTAL_MEMORY = 141 << 30

    CLOCK_FUNCTION = 0xC10C             # cubinrun_clock: the fake libcuda writes its record

    def __init__(self, launches: Callable[[], int], libcuda=None):
        self.launches = launches            # how many launches the fake libcuda took
        self.libcuda = libcuda              # a FakeDriver, for the graph calls
        self.sticky_kernels: set[str] = set()
        self.crash_kernels: set[str] = set()
        self.sticky_marker: bytes = b""     # a module whose image holds it faults
        self.poison_at_sync = False
        self.poisoned = False
        self.recorded: dict[int, tuple[int, int]] = {}    # event: (launches, graph nodes)
        self.graph_nodes = 0                # launches replayed from graphs
        self.memory: dict[int, ctypes.Array] = {}
        self.calls: list[str] = []
        self.events = itertools.count(1)
        self.function_attributes: dict[str, int] = {}
        self.free_memory = self.TOTAL_MEMORY
        # the loaded module's globals (name: bytes), as cuModuleGetGlobal finds them;
        # None: the sizes the cubin's symbol table gives (any name answers, 1 KiB)
        self.module_globals: dict[str, int] | None = None
        self.global_addresses: dict[str, int] = {}
        self._global_storage: list = []

    def __call__(self, name: str, *args, context: str = ""):
        self.calls.append(name)
        if self.poisoned and name != "cuDevicePrimaryCtxReset":
            raise driver.cuda_error(name, CUDA_ERROR_ILLEGAL_ADDRESS, context)
        if self.poison_at_sync and name in ("cuStreamSynchronize", "cuCtxSynchronize"):
            self.poisoned = True
            raise driver.cuda_error(name, CUDA_ERROR_ILLEGAL_ADDRESS, context)
        return getattr(self, name)(*args)

    def cuDevicePrimaryCtxReset(self, handle):
        self.poisoned = self.poison_at_sync = False

    def cuInit(self, flags): return None
    def cuCtxSynchronize(self): return None
    def cuDeviceGetCount(self): return len(visible_devices())
    def cuDeviceGet(self, ordinal): return visible_devices()[ordinal]     # its physical index
    def cuDeviceGetName(self, length, handle): return device_name(handle).encode() + b"\0\0"
    def cuDeviceGetUuid(self, handle): return FakeUuid(bytes([0xFA, 0xCE, *[0] * 13, handle]))
    def cuDevicePrimaryCtxRetain(self, handle): return 1
    def cuCtxSetCurrent(self, context): return None
    def cuCtxGetDevice(self): return visible_devices()[0]

    def cuDeviceGetAttribute(self, attribute, handle):
        return self.ATTRIBUTES.get(attribute.name.removeprefix("CU_DEVICE_ATTRIBUTE_"), 1)

    def cuModuleLoadData(self, image):
        if self.sticky_marker and self.sticky_marker in bytes(image):
            self.poison_at_sync = True      # a module marked to fault (its launch "faults")
        return 7

    def cuModuleGetFunction(self, module, name):
        kernel = name.decode()
        if kernel in self.crash_kernels:
            os.kill(os.getpid(), signal.SIGKILL)
        if kernel in self.sticky_kernels:
            self.poison_at_sync = True      # its launch "faults"; the next sync says so
        return self.CLOCK_FUNCTION if kernel == "cubinrun_clock" else 0xF00D

    def cuModuleGetGlobal(self, module, name):
        symbol = name.decode()
        sizes = self.module_globals
        if sizes is not None and symbol not in sizes:
            raise driver.cuda_error("cuModuleGetGlobal", CUDA_ERROR_NOT_FOUND)
        size = 1024 if sizes is None else sizes[symbol]
        if symbol not in self.global_addresses:     # module memory: not a cuMemAlloc's
            storage = (ctypes.c_char * size)()
            self._global_storage.append(storage)
            self.global_addresses[symbol] = ctypes.addressof(storage)
        return self.global_addresses[symbol], size

    def global_bytes(self, symbol: str, count: int) -> bytes:
        """What the module's global holds now (its first `count` bytes)."""
        return ctypes.string_at(self.global_addresses[symbol], count)

    def cuFuncGetAttribute(self, attribute, function):
        key = attribute.name.removeprefix("CU_FUNC_ATTRIBUTE_")
        return {"MAX_THREADS_PER_BLOCK": 1024, "NUM_REGS": 24}.get(key, 0)

    def cuFuncSetAttribute(self, function, attribute, value):
        self.function_attributes[attribute.name.removeprefix("CU_FUNC_ATTRIBUTE_")] = value

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, function, threads, shared):
        return 2

    def cuMemAlloc(self, nbytes): return self._allocate(nbytes)

    def _allocate(self, nbytes):
        buffer = (ctypes.c_char * (nbytes + 256))()
        address = -(-ctypes.addressof(buffer) // 256) * 256     # cuMemAlloc's alignment
        self.memory[address] = buffer
        return address

    def cuMemFree(self, pointer): del self.memory[pointer]
    def cuMemHostAlloc(self, nbytes, flags): return self._allocate(nbytes)
    def cuMemFreeHost(self, pointer): del self.memory[pointer]
    def cuMemGetInfo(self): return self.free_memory, self.TOTAL_MEMORY
    def cuMemcpyHtoD(self, dst, src, n): ctypes.memmove(dst, src, n)
    def cuMemcpyDtoH(self, dst, src, n): ctypes.memmove(dst, src, n)
    def cuMemcpyHtoDAsync(self, dst, src, n, stream): ctypes.memmove(dst, src, n)
    def cuMemcpyDtoHAsync(self, dst, src, n, stream): ctypes.memmove(dst, src, n)
    def cuMemcpyDtoDAsync(self, dst, src, n, stream): ctypes.memmove(dst, src, n)
    def cuMemsetD8Async(self, dst, byte, n, stream): ctypes.memset(dst, byte, n)
    def cuMemsetD16Async(self, dst, value, n, stream): self._fill(dst, ctypes.c_uint16, value, n)
    def cuMemsetD32Async(self, dst, value, n, stream): self._fill(dst, ctypes.c_uint32, value, n)

    @staticmethod
    def _fill(dst, ctype, value, n):
        np.ctypeslib.as_array((ctype * n).from_address(dst))[:] = value

    def cuStreamCreate(self, flags): return 0x5
    def cuStreamDestroy(self, stream): return None
    def cuStreamSynchronize(self, stream): return None
    def cuEventCreate(self, flags): return next(self.events)
    def cuEventSynchronize(self, event): return None
    def cuEventRecord(self, event, stream):
        self.recorded[event] = (self.launches(), self.graph_nodes)

    def cuEventElapsedTime(self, start, end):
        launches = self.recorded[end][0] - self.recorded[start][0]
        nodes = self.recorded[end][1] - self.recorded[start][1]
        return (self.EVENT_OFFSET_US + launches * self.KERNEL_US
                - nodes * self.GRAPH_HIDDEN_US) / 1000.0

    def cuEventDestroy(self, event): return None

    # Stream capture and graphs: the fake libcuda holds the launches, so it answers.
    def _graph(self, name, result, *values):
        if result != 0:
            raise driver.cuda_error(name, result)
        return values[0] if values else None

    def cuStreamBeginCapture(self, stream, mode):
        return self._graph("cuStreamBeginCapture", self.libcuda.begin_capture(stream, int(mode)))

    def cuStreamEndCapture(self, stream):
        return self._graph("cuStreamEndCapture", *self.libcuda.end_capture(stream))

    def cuGraphInstantiate(self, graph, flags):
        return self._graph("cuGraphInstantiate", *self.libcuda.instantiate(graph))

    def cuGraphLaunch(self, graph_exec, stream):
        before = self.launches()
        result = self.libcuda.launch_graph(graph_exec, stream)
        self.graph_nodes += self.launches() - before
        return self._graph("cuGraphLaunch", result)

    def cuGraphExecDestroy(self, graph_exec):
        return self._graph("cuGraphExecDestroy", self.libcuda.destroy("cuGraphExecDestroy",
                                                                      graph_exec))

    def cuGraphDestroy(self, graph):
        return self._graph("cuGraphDestroy", self.libcuda.destroy("cuGraphDestroy", graph))
