"""How much memory the host has and may give: what the OS says is available
now (gpu/capacity.py refuses a launch whose buffers need more) and the bound on
a check's whole-array reference ($CUBINRUN_CHECK_MEMORY)."""
from __future__ import annotations

import ctypes
import os

from ..errors import SpecError
from ..platform import WINDOWS


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
