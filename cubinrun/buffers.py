"""Device memory for one launch: the spec's buffers (filled from their host
arrays) and the scratch areas, freed together at the end."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import driver
from .hostdata import make_host_array
from .plan import Plan, ScratchPlan
from .spec import BufferArg

CU_MEM_ALLOC_ALIGNMENT = 256        # cuMemAlloc's guarantee


@dataclass
class DeviceBuffer:
    spec: BufferArg
    host: np.ndarray                 # the input, kept for the check
    pointer: int

    def download(self) -> np.ndarray:
        out = np.empty_like(self.host)
        driver.copy_to_host(out, self.pointer)
        return out


@dataclass
class DeviceMemory:
    buffers: dict[str, DeviceBuffer] = field(default_factory=dict)
    global_scratch: int = 0
    profile_scratch: int = 0
    guard: bool = False              # guard bands around each buffer (debug/guards.py)
    guards: list = field(default_factory=list)
    _allocations: list[int] = field(default_factory=list)

    def _alloc(self, nbytes: int, align: int = 1) -> int:
        extra = align if align > CU_MEM_ALLOC_ALIGNMENT else 0
        base = driver.alloc(nbytes + extra)
        self._allocations.append(base)
        return -(-base // align) * align if extra else base

    def add_buffer(self, spec: BufferArg, host: np.ndarray) -> DeviceBuffer:
        if self.guard:
            from .debug.guards import guarded_alloc
            pointer, guard = guarded_alloc(self._alloc, spec.name, spec.nbytes, spec.dtype.size,
                                           spec.offset_bytes)
            self.guards.append(guard)
        else:
            pointer = self._alloc(spec.nbytes + spec.offset_bytes) + spec.offset_bytes
        driver.copy_to_device(pointer, host)
        buffer = DeviceBuffer(spec, host, pointer)
        self.buffers[spec.name] = buffer
        return buffer

    def add_scratch(self, scratch: ScratchPlan) -> int:
        """Zeroed, as a freshly allocated Triton scratch area is not, but
        reproducible runs are worth 1 memset."""
        if scratch.nbytes == 0:
            return 0
        pointer = self._alloc(scratch.nbytes, scratch.align)
        driver.memset_async(pointer, 0, scratch.nbytes, 0)
        return pointer

    def free(self) -> None:
        while self._allocations:
            driver.free_quietly(self._allocations.pop())


def make_host_arrays(plan: Plan) -> list[np.ndarray]:
    """Every buffer's input, in the spec's order (no GPU needed)."""
    return [make_host_array(spec, index) for index, spec in enumerate(plan.spec.buffers.values())]


def allocate(plan: Plan, host_arrays: list[np.ndarray] | None = None,
             guard: bool = False) -> DeviceMemory:
    """Device buffers filled from `host_arrays` (made here if not given) and the
    scratch; with `guard`, each buffer between two guard bands."""
    memory = DeviceMemory(guard=guard)
    try:
        if host_arrays is None:
            host_arrays = make_host_arrays(plan)
        for spec, host in zip(plan.spec.buffers.values(), host_arrays, strict=True):
            memory.add_buffer(spec, host)
        memory.global_scratch = memory.add_scratch(plan.global_scratch)
        memory.profile_scratch = memory.add_scratch(plan.profile_scratch)
    except BaseException:
        memory.free()
        raise
    return memory
