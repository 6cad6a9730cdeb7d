"""Refuse a spec that cannot fit, before anything is made or allocated.

Host memory a launch needs: the inputs kept whole (random integers, which NumPy
draws in one call, and `file:` inputs), the pinned staging slots, and the
workers' blocks; every other input is made block by block into the staging
slots and made again block by block by the check. Device memory: every buffer
and the scratch areas, each allocation rounded to the driver's 2 MiB pages.
"""
from __future__ import annotations

import ctypes
import os

from . import driver
from ..errors import CudaError, SpecError
from ..platform import WINDOWS
from ..text import human_bytes

_WORKER_BYTES = 96 << 20        # per worker: a few float64 blocks of a check or a draw
_DEVICE_PAGE = 2 << 20


def kept_bytes(buffer) -> int:
    """Host bytes an input keeps whole while the launch runs."""
    init = buffer.init
    if init.kind == "file" or (init.kind == "random" and buffer.dtype.kind != "float"):
        return buffer.nbytes
    return 0


def host_need(spec) -> tuple[int, list[str]]:
    """(bytes, what they are) of host memory the launch needs at its peak."""
    from ..hostdata.threads import worker_count
    from .transfer import SLOT_BYTES, SLOTS
    buffers = list(spec.buffers.values())
    kept = [(b.name, kept_bytes(b)) for b in buffers if kept_bytes(b)]
    largest = max((b.nbytes for b in buffers), default=0)
    staging = SLOTS * min(SLOT_BYTES, largest)
    workers = worker_count() * _WORKER_BYTES if largest else 0
    parts = [f"{name} {human_bytes(n)} kept whole" for name, n in kept]
    parts.append(f"staging and workers {human_bytes(staging + workers)}")
    return sum(n for _, n in kept) + staging + workers, parts


def available_host_memory() -> int | None:
    """Bytes the OS can give without swapping (None where it cannot say)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    if WINDOWS:
        return _windows_available()
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


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


def _windows_available() -> int | None:
    class Status(ctypes.Structure):
        _fields_ = [("length", ctypes.c_uint32), ("load", ctypes.c_uint32),
                    ("total_phys", ctypes.c_uint64), ("avail_phys", ctypes.c_uint64),
                    ("total_page", ctypes.c_uint64), ("avail_page", ctypes.c_uint64),
                    ("total_virtual", ctypes.c_uint64), ("avail_virtual", ctypes.c_uint64),
                    ("avail_extended", ctypes.c_uint64)]
    status = Status()
    status.length = ctypes.sizeof(Status)
    try:
        ok = ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status))
    except (AttributeError, OSError):
        return None
    return int(status.avail_phys) if ok else None


def total_host_memory() -> int | None:
    """Bytes of RAM in the host (None where it cannot say)."""
    if WINDOWS:
        return None
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory_limit() -> int:
    """Bytes a check's whole-array reference may use: $CUBINRUN_CHECK_MEMORY
    (bytes, or with a K/M/G/T suffix), by default a quarter of the host's RAM
    (a quarter of what is available now where the total is unknown)."""
    from ..limits import DEFAULT_CHECK_MEMORY
    text = os.environ.get("CUBINRUN_CHECK_MEMORY", "").strip()
    if text:
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
        scale = units.get(text[-1].upper(), 1)
        digits = text[:-1] if text[-1].upper() in units else text
        if not digits.isdigit():
            raise SpecError(f"CUBINRUN_CHECK_MEMORY={text!r}: expected bytes, such as "
                            "8G or 4000000000")
        return int(digits) * scale
    total = total_host_memory() or available_host_memory()
    return total // 4 if total else DEFAULT_CHECK_MEMORY
