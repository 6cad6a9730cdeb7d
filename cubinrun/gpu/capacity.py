"""Refuse a spec that cannot fit, before anything is made or allocated.

Host memory a launch needs: the inputs kept whole (random integers, which NumPy
draws in one call, unless the device draws them and no host check reads them,
and `file:` inputs), the pinned staging slots, and the workers' blocks; every other input is made block by block into the staging
slots and made again block by block by the check. Device memory: every buffer
and the scratch areas, each allocation rounded to the driver's 2 MiB pages.
"""
from __future__ import annotations

from . import driver
from ..errors import CudaError, SpecError
from ..hostdata.host_memory import available_host_memory
from ..text import human_bytes

_WORKER_BYTES = 96 << 20        # per worker: a few float64 blocks of a check or a draw
_DEVICE_PAGE = 2 << 20


def kept_bytes(buffer, index: int = 0, read_on_host: frozenset[str] | None = None) -> int:
    """Host bytes an input keeps whole while the launch runs: a random integer
    buffer is not made on the host at all when the device draws it and no check
    the host runs reads it (`read_on_host`: the names such checks read; None:
    count it as the host path would). A device that cannot draw after all (no
    NVRTC) has the host make it, uncounted here."""
    init = buffer.init
    if init.kind == "file":
        return buffer.nbytes
    if init.kind == "random" and buffer.dtype.kind != "float":
        if read_on_host is not None and buffer.name not in read_on_host:
            from .device_data import drawn_on_device
            if drawn_on_device(buffer, index):
                return 0
        return buffer.nbytes
    return 0


def _read_on_host(spec) -> frozenset[str] | None:
    """The buffers a check the host runs may read (None: every check is the
    host's, or a Python reference may read any of them)."""
    from .device_data import checks_on_device, enabled
    if not enabled():
        return None
    on_device = checks_on_device(spec)
    names: set[str] = set()
    for check in spec.checks:
        if check.name in on_device:
            continue
        if check.reference is not None:         # a Python reference: any input
            return None
        if check.expect is not None:            # (a file: reference reads no input)
            names |= {name.split("[")[0] for name in check.expect.names}
    return frozenset(names)


def host_need(spec) -> tuple[int, list[str]]:
    """(bytes, what they are) of host memory the launch needs at its peak."""
    from ..hostdata.threads import worker_count
    from .transfer import SLOT_BYTES, SLOTS
    buffers = list(spec.buffers.values())
    reads = _read_on_host(spec)
    sizes = [(b.name, kept_bytes(b, i, reads)) for i, b in enumerate(buffers)]
    kept = [(name, n) for name, n in sizes if n]
    largest = max((b.nbytes for b in buffers), default=0)
    staging = SLOTS * min(SLOT_BYTES, largest)
    workers = worker_count() * _WORKER_BYTES if largest else 0
    parts = [f"{name} {human_bytes(n)} kept whole" for name, n in kept]
    parts.append(f"staging and workers {human_bytes(staging + workers)}")
    return sum(n for _, n in kept) + staging + workers, parts


def check_host(spec) -> None:
    """SpecError (exit 2) when the launch needs more host memory than is available."""
    need, parts = host_need(spec)
    available = available_host_memory()
    if available is not None and need > available:
        raise SpecError(f"the buffers need {human_bytes(need)} of host memory "
                        f"({', '.join(parts)}) and {human_bytes(available)} is available",
                        field="args")


def device_need(plan, guard: bool = False, repeat: int = 1) -> int:
    """Bytes of device memory: every buffer (past its `offset:`, between guard
    bands with `guard`), the scratch, and with `repeat` > 1 the copy of every
    buffer that `--repeat` keeps of run 1."""
    from .guards import GUARD_BYTES
    buffers = plan.spec.buffers.values()
    bands = 2 * GUARD_BYTES if guard else 0
    sizes = [b.nbytes + b.offset_bytes + bands for b in buffers]
    sizes += [s.nbytes + s.align for s in (plan.global_scratch, plan.profile_scratch) if s.nbytes]
    if repeat > 1:
        sizes += [b.nbytes for b in buffers]
    return sum(-(-max(n, 1) // _DEVICE_PAGE) * _DEVICE_PAGE for n in sizes)


def check_device(plan, device_name: str = "the device", guard: bool = False,
                 repeat: int = 1) -> None:
    """Before allocating: SpecError (exit 2) when the buffers exceed the device's
    memory, CudaError (exit 4) when they exceed what is free now."""
    need = device_need(plan, guard, repeat)
    if need == 0:
        return
    what = "the buffers and scratch" + (" (and run 1's copy for --repeat)" if repeat > 1 else "")
    free, total = driver.memory_info()
    if need > total:
        raise SpecError(f"{what} need {human_bytes(need)} of device memory "
                        f"and {device_name} has {human_bytes(total)}", field="args")
    if need > free:
        raise CudaError(f"{what} need {human_bytes(need)} of device memory "
                        f"and {human_bytes(free)} of {device_name}'s {human_bytes(total)} is "
                        f"free", call="cuMemGetInfo")
