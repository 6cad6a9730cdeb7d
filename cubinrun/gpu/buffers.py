"""Device memory for one launch: the spec's buffers (filled from their inputs)
and the scratch areas, freed together at the end.

Inputs are never whole in host memory: what the device can draw itself
(random floats and integers, normals, aranges, 8-byte fills:
gpu/device_data.py) it draws, value for value the host's stream; the rest is
made block by block into pinned staging slots and copied while the next
blocks are made (`transfer.Staging`); buffers whose every element is the same
(zeros, and fills of 1, 2 or 4 bytes) are set by a memset. The inputs stay
available, as `hostdata.InputValues`, for a host check to read again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import driver
from ..hostdata.values import InputValues, input_values
from ..plan.make import Plan, ScratchPlan
from ..specfile import BufferArg
from .input_copies import InputCopies, copy_key
from .transfer import Staging

CU_MEM_ALLOC_ALIGNMENT = 256        # cuMemAlloc's guarantee


@dataclass
class DeviceBuffer:
    spec: BufferArg
    values: InputValues              # the input, read again by the check
    pointer: int


@dataclass
class DeviceMemory:
    buffers: dict[str, DeviceBuffer] = field(default_factory=dict)
    global_scratch: int = 0
    profile_scratch: int = 0
    staging: Staging | None = None
    owns_staging: bool = True        # False: a session's, kept for its next run
    seconds: dict[str, float] = field(default_factory=dict)    # "init", "upload"
    guard: bool = False              # guard bands around each buffer (gpu/guards.py)
    guards: list = field(default_factory=list)
    globals: dict = field(default_factory=dict)     # module_globals.DeviceGlobal, by name
    copies: InputCopies | None = None   # a session's kept inputs (gpu/input_copies.py)
    on_device: list[str] = field(default_factory=list)     # inputs the device drew itself
    digests: dict[str, int] = field(default_factory=dict)  # inputs of device checks, as uploaded
    drawn_seconds: float = 0.0          # drawing inputs on the device (the "init" stage)
    kept_reference: object = None       # a session's device_data.KeptReference
    _allocations: list[int] = field(default_factory=list)

    def _alloc(self, nbytes: int, align: int = 1) -> int:
        extra = align if align > CU_MEM_ALLOC_ALIGNMENT else 0
        base = driver.alloc(nbytes + extra)
        self._allocations.append(base)
        return -(-base // align) * align if extra else base

    def add_buffer(self, spec: BufferArg, values: InputValues) -> DeviceBuffer:
        """Room for the buffer (`offset:` bytes past an allocation's start, between
        guard bands with `guard`, whose patterns go on the staging stream); `upload`
        fills it."""
        if self.guard:
            from .guards import guarded_alloc
            pointer, guard = guarded_alloc(self._alloc, spec.name, spec.nbytes, spec.dtype.size,
                                           spec.offset_bytes, self.staging.stream)
            self.guards.append(guard)
        else:
            pointer = self._alloc(spec.nbytes + spec.offset_bytes) + spec.offset_bytes
        buffer = DeviceBuffer(spec, values, pointer)
        self.buffers[spec.name] = buffer
        return buffer

    def add_scratch(self, scratch: ScratchPlan) -> int:
        """Zeroed, as a freshly allocated Triton scratch area is not, but
        reproducible runs are worth 1 memset (on the staging stream, which
        `upload` waits for)."""
        if scratch.nbytes == 0:
            return 0
        pointer = self._alloc(scratch.nbytes, scratch.align)
        driver.memset_async(pointer, 0, scratch.nbytes, self.staging.stream)
        return pointer

    def upload(self) -> None:
        """Fill every buffer from its input (the device is free to run afterwards)."""
        from . import module_globals
        staging = self.staging
        kept = module_globals.write(self.globals, staging.stream)     # alive until finish()
        copies = self.copies
        for position, buffer in enumerate(self.buffers.values()):
            values, nbytes = buffer.values, buffer.spec.nbytes
            if values.pattern is not None:
                driver.fill_async(buffer.pointer, values.pattern, values.count, staging.stream)
                continue
            key = copy_key(position, values) if copies else None
            if copies and copies.restore(key, buffer.pointer, nbytes, staging.stream):
                continue
            if not self._drawn_on_device(position, buffer):
                staging.upload(buffer.pointer, values.host, values.count, values.block_size,
                               values.block)
            if copies:
                copies.keep(key, buffer.pointer, nbytes, staging.stream)
        staging.finish()
        del kept

    def _drawn_on_device(self, position: int, buffer: DeviceBuffer) -> bool:
        """Made by the device itself (gpu/device_data.py), the same values the host
        would upload; False when it is the host's to make."""
        from . import device_data
        from ..hostdata.device_draws import device_draw
        if not device_data.drawn_on_device(buffer.spec, position, buffer.values):
            return False
        plan = device_draw(buffer.spec, position, buffer.values)
        began = time.perf_counter()
        drawn = device_data.draw(plan, buffer.pointer, self.staging.stream)
        # waited for here, so the stages say what making the inputs cost (init)
        driver.stream_synchronize(self.staging.stream, context=f"drawing {buffer.spec.name}")
        self.drawn_seconds += time.perf_counter() - began
        if drawn:
            self.on_device.append(buffer.spec.name)
        return drawn

    def restore(self, plan: Plan) -> None:
        """Back to the state before the first launch (`--repeat`): the scratch zeroed
        and every buffer's input made and uploaded again."""
        for pointer, scratch in ((self.global_scratch, plan.global_scratch),
                                 (self.profile_scratch, plan.profile_scratch)):
            if pointer:
                driver.memset_async(pointer, 0, scratch.nbytes, self.staging.stream)
        self.upload()

    def alloc_copy(self, pointer: int, nbytes: int) -> int:
        """A device copy of `nbytes` at `pointer`, queued on the staging stream (so
        before any later upload), freed with the rest."""
        copy = self._alloc(nbytes)
        driver.copy_on_device_async(copy, pointer, nbytes, self.staging.stream)
        return copy

    def free(self) -> None:
        if self.staging is not None:
            if self.owns_staging:
                self.staging.close()
            else:
                self.staging.reset()
            self.staging = None
        while self._allocations:
            driver.free_quietly(self._allocations.pop())


def make_inputs(plan: Plan) -> list[InputValues]:
    """Every buffer's input, in the spec's order, checked but not made yet (no GPU
    needed); a spec whose inputs cannot fit the host is refused here."""
    from .capacity import check_host
    check_host(plan.spec)
    return [input_values(spec, index) for index, spec in enumerate(plan.spec.buffers.values())]


def make_host_arrays(plan: Plan) -> list[np.ndarray]:
    """Every buffer's input as a whole array."""
    return [values.whole() for values in make_inputs(plan)]


def allocate(plan: Plan, inputs: list[InputValues] | None = None,
             device_name: str = "the device", guard: bool = False,
             repeat: int = 1,
             staging: Callable[[int], Staging] | None = None,
             module_globals: dict | None = None,
             copies: InputCopies | None = None) -> DeviceMemory:
    """Device buffers filled from `inputs` (made here if not given) and the scratch;
    with `guard`, each buffer between two guard bands. Refused before anything is
    allocated if they cannot fit the device (with room for `--repeat`'s copy of
    run 1's buffers when `repeat` > 1). `staging(largest)`: pinned slots to
    borrow (a session's), rather than slots made and freed for this run.
    `module_globals`: the module's globals to write with the buffers
    (module_globals.bind). `copies`: a session's kept inputs, used and added to;
    those this run does not use are freed first."""
    from .capacity import check_device
    if inputs is None:
        inputs = make_inputs(plan)
    if copies is not None:
        copies.keep_only({copy_key(i, values) for i, values in enumerate(inputs)})
    check_device(plan, device_name, guard=guard, repeat=repeat)
    memory = DeviceMemory(guard=guard, copies=copies)
    began = time.perf_counter()
    try:
        largest = max((b.nbytes for b in plan.spec.buffers.values()), default=0)
        memory.staging = staging(largest) if staging else Staging(largest)
        memory.owns_staging = staging is None
        for spec, values in zip(plan.spec.buffers.values(), inputs, strict=True):
            memory.add_buffer(spec, values)
        memory.global_scratch = memory.add_scratch(plan.global_scratch)
        memory.profile_scratch = memory.add_scratch(plan.profile_scratch)
        memory.globals = dict(module_globals or {})
        memory.upload()
        from .device_data import input_digests
        memory.digests = input_digests(plan.spec, memory)
    except BaseException:
        memory.free()
        raise
    making = memory.staging.waits.host + memory.drawn_seconds
    memory.seconds = {"init": making, "upload": time.perf_counter() - began - making}
    return memory
