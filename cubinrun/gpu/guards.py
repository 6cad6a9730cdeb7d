"""Guard bands: bytes of a known pattern before and after every buffer.

Each buffer is allocated with GUARD_BYTES more on both sides and the kernel
gets the address GUARD_BYTES past the allocation's start. cuMemAlloc returns
256-byte aligned memory and GUARD_BYTES is a multiple of 256, so the buffer
keeps the alignment it would have had alone. After the checked launch both
bands are read back; a byte that changed means the kernel wrote outside the
buffer, and the finding names the buffer, the side and the offsets written.

Guards see writes only: a read past the end returns the pattern and goes
unnoticed (compute-sanitizer's memcheck sees reads; and since memcheck counts
guard bytes as part of the allocation, `--sanitize` turns guards off).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import driver

GUARD_BYTES = 256
# Not a value kernels commonly write: not 0, not 0xff, not a small float or int.
PATTERN = bytes([0xCB, 0x5E, 0xA7, 0x3D])


# One band's bytes; lives as long as the module, as async copies read it later.
_BAND = np.frombuffer(PATTERN * (GUARD_BYTES // len(PATTERN)), dtype=np.uint8)


@dataclass(frozen=True)
class Guard:
    """The two bands around one buffer."""
    name: str
    pointer: int                 # the buffer itself
    nbytes: int
    itemsize: int

    @property
    def before(self) -> int:
        return self.pointer - GUARD_BYTES

    @property
    def after(self) -> int:
        return self.pointer + self.nbytes


@dataclass(frozen=True)
class GuardViolation:
    """Bytes outside a buffer that the launch changed. Offsets are in bytes
    from the buffer's start: negative before it, `nbytes` and up after it."""
    name: str
    side: str                    # "before" or "after"
    first: int                   # lowest offset changed
    last: int                    # highest offset changed
    changed: int                 # how many bytes changed
    itemsize: int

    def describe(self) -> str:
        where = "before its start" if self.side == "before" else "past its end"
        span = f"byte {self.first}" if self.first == self.last else \
            f"bytes {self.first}..{self.last}"
        element = self.first // self.itemsize
        return (f"{self.name}: {self.changed} byte{'s' if self.changed != 1 else ''} written "
                f"{where}, at {span} (element [{element}])")

    def to_json(self) -> dict:
        return {"buffer": self.name, "side": self.side, "first_offset": self.first,
                "last_offset": self.last, "bytes_changed": self.changed,
                "first_element": self.first // self.itemsize}


def guarded_alloc(alloc: Callable[[int], int], name: str, nbytes: int,
                  itemsize: int, offset: int = 0, stream: int = 0) -> tuple[int, Guard]:
    """Allocate `nbytes` with a band on each side through `alloc`; fill the bands
    on `stream` (the buffers' upload stream, which is waited for before the
    launch). `offset` (a spec's `offset:`) moves the buffer and its bands that
    many bytes past the alignment. Returns the buffer's address and its Guard."""
    base = alloc(offset + nbytes + 2 * GUARD_BYTES)
    guard = Guard(name, base + offset + GUARD_BYTES, nbytes, itemsize)
    for address in (guard.before, guard.after):
        driver.copy_to_device_async(address, _BAND.ctypes.data, GUARD_BYTES, stream)
    return guard.pointer, guard


def check_guards(guards: list[Guard]) -> list[GuardViolation]:
    """Read every band back; one violation per band that changed."""
    pattern = _BAND
    found = []
    band = np.empty(GUARD_BYTES, dtype=np.uint8)
    for guard in guards:
        for side, address, origin in (("before", guard.before, -GUARD_BYTES),
                                      ("after", guard.after, guard.nbytes)):
            driver.copy_to_host(band, address)
            changed = np.flatnonzero(band != pattern)
            if changed.size:
                found.append(GuardViolation(guard.name, side, origin + int(changed[0]),
                                            origin + int(changed[-1]), int(changed.size),
                                            guard.itemsize))
    return found


@dataclass
class GuardReport:
    """What the guards found after the checked launch (a RunResult debug report)."""
    key = "guards"
    checked: int                           # buffers guarded
    violations: list[GuardViolation]

    @property
    def passed(self) -> bool | None:
        return not self.violations

    def to_json(self) -> dict:
        return {"enabled": True, "buffers": self.checked, "guard_bytes": GUARD_BYTES,
                "passed": self.passed, "violations": [v.to_json() for v in self.violations]}

    def render(self, console) -> None:
        if not self.violations:
            return
        console.print(f"[red]guard bands FAIL[/red]: the kernel wrote outside "
                      f"{len({v.name for v in self.violations})} buffer(s)")
        for violation in self.violations:
            console.print(f"  {violation.describe()}")
