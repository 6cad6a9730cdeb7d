"""Device copies of a session's inputs, kept from one run to the next.

A tune or a sweep gives every point the same inputs (A and B of a matmul
over tile sizes): making 32M random values and uploading them took 87 ms a
point on the H200, a device-to-device copy of values kept from the first
point well under 1 ms. A copy is keyed by the buffer's position and its
fingerprint (hostdata.refcache: dtype, shape, init and seed; a file's size
and time), and is taken right after the upload, before any kernel runs, so
it holds the input as made whatever a kernel later writes.

A session keeps copies from its second run on (pipeline/session.py), so a
single launch never pays for them. Copies the current run does not name are
freed before it allocates, so they
never stand in the way of its buffers; a new copy is kept only while all of
them stay within a quarter of the device's free memory.
"""
from __future__ import annotations

from typing import Hashable

from . import driver
from ..hostdata.refcache import described, fingerprint
from ..hostdata.values import InputValues

FREE_MEMORY_SHARE = 4           # copies take at most 1/4 of the free memory


def copy_key(position: int, values: InputValues) -> Hashable | None:
    """What a copy of this input is kept under; None when nothing says what the
    values are (a caller's array)."""
    what = fingerprint(values)
    return (position, what) if described(what) else None


class InputCopies:
    def __init__(self) -> None:
        self._copies: dict[Hashable, tuple[int, int]] = {}     # key -> (pointer, bytes)

    def keep_only(self, keys: set) -> None:
        """Free every copy whose key is not in `keys` (the run about to allocate)."""
        for key in [k for k in self._copies if k not in keys]:
            driver.free_quietly(self._copies.pop(key)[0])

    def restore(self, key: Hashable | None, pointer: int, nbytes: int, stream: int) -> bool:
        """Queue the kept copy into `pointer` on `stream`; False when there is none."""
        kept = self._copies.get(key) if key is not None else None
        if kept is None or kept[1] != nbytes:
            return False
        driver.copy_on_device_async(pointer, kept[0], nbytes, stream)
        return True

    def keep(self, key: Hashable | None, source: int, nbytes: int, stream: int) -> None:
        """Copy the input just uploaded at `source` (queued after the upload on
        `stream`), if there is room."""
        if key is None or key in self._copies or nbytes == 0:
            return
        free, _ = driver.memory_info()
        held = sum(n for _, n in self._copies.values())
        if held + nbytes > free // FREE_MEMORY_SHARE:
            return
        pointer = driver.alloc(nbytes)
        driver.copy_on_device_async(pointer, source, nbytes, stream)
        self._copies[key] = (pointer, nbytes)

    def close(self) -> None:
        self.keep_only(set())
