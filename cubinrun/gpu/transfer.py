"""Host <-> device copies through a few pinned staging slots, overlapped with
the host's work on the other slots.

Uploading a buffer: the worker threads make its input straight into a slot,
block by block, while the copy engine sends the slots filled before. Downloading
an output: the copy engine fills the next slots while the workers check (and
the main thread saves) the slot that arrived. So no buffer is ever whole in
host memory, pageable copies (which the driver stages through pinned buffers
of its own while the calling thread waits) are avoided, and the host's time is
spent making and checking data rather than waiting for copies.

All driver calls are made on the calling thread (the one whose context is
current); the workers only read and write slot memory. A slot is reused only
after its copy finished (its event) and after every task reading it finished.
"""
from __future__ import annotations

import ctypes
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from . import driver
from ..errors import CudaError
from ..hostdata.threads import gather, submit

SLOT_BYTES = 32 << 20       # ~1 ms per copy at PCIe 5 rates: the per-copy cost is noise
SLOTS = 4                   # in flight: one copying, the others being made or read


def slot_size(largest: int) -> int:
    """A slot's bytes for buffers of up to `largest`: whole pages, at most SLOT_BYTES."""
    return max(4096, min(SLOT_BYTES, -(-largest // 4096) * 4096))


@dataclass
class _Slot:
    address: int
    nbytes: int
    event: object
    readers: list[Future] = field(default_factory=list)     # tasks still reading it
    copying: bool = False

    def view(self, dtype: np.dtype, count: int) -> np.ndarray:
        raw = (ctypes.c_char * self.nbytes).from_address(self.address)
        return np.frombuffer(raw, dtype=dtype, count=count)


@dataclass
class Waits:
    """Seconds the calling thread waited on the host's work and on copies."""
    host: float = 0.0
    copies: float = 0.0


class Staging:
    """Pinned slots of `slot_bytes` (at most SLOT_BYTES) and a stream of their own."""

    def __init__(self, slot_bytes: int):
        self.slot_bytes = slot_size(slot_bytes)
        self.stream = 0
        self.slots: list[_Slot] = []
        self.waits = Waits()
        self._next = 0
        try:
            self.stream = driver.create_stream()
            for _ in range(SLOTS):
                event = driver.create_event(timing=False)
                self.slots.append(_Slot(0, self.slot_bytes, event))
                self.slots[-1].address = driver.host_alloc(self.slot_bytes)
        except BaseException:
            self.close()
            raise

    def holds(self, nbytes: int) -> bool:
        """Whether slots of this size serve buffers of up to `nbytes` as well as new ones would."""
        return bool(self.slots) and self.slot_bytes >= slot_size(nbytes)

    def reset(self) -> None:
        """Ready for the next run: every copy landed, every reader done, waits at 0."""
        self._drain()
        self.waits = Waits()

    def elements(self, itemsize: int, multiple: int = 1) -> int:
        """Elements of `itemsize` bytes a slot holds, a multiple of `multiple` when one fits."""
        count = self.slot_bytes // itemsize
        return count - count % multiple if count >= multiple else count

    # -- upload

    def upload(self, pointer: int, dtype: np.dtype, count: int, block_size: int,
               make_block: Callable[[int], np.ndarray]) -> None:
        """Fill `count` elements at `pointer` with make_block(0), make_block(1), ...
        (each `block_size` elements but the last), made on the workers in order."""
        per_slot = self.elements(dtype.itemsize, block_size)
        if per_slot < min(block_size, count):
            raise ValueError(f"a slot of {self.slot_bytes} bytes holds no whole block")
        pending: deque = deque()
        try:
            for start in range(0, count, per_slot):
                stop = min(count, start + per_slot)
                slot = self._take()
                view = slot.view(dtype, stop - start)
                slot.readers = [submit(_fill, view, k * block_size - start, make_block, k)
                                for k in range(start // block_size, -(-stop // block_size))]
                pending.append((slot, start, stop))
                if len(pending) >= SLOTS - 1:
                    self._send(pointer, dtype.itemsize, *pending.popleft())
            while pending:
                self._send(pointer, dtype.itemsize, *pending.popleft())
        except BaseException:
            self._drain()
            raise

    def _send(self, pointer: int, itemsize: int, slot: _Slot, start: int, stop: int) -> None:
        self._wait_readers(slot)
        driver.copy_to_device_async(pointer + start * itemsize, slot.address,
                                    (stop - start) * itemsize, self.stream)
        driver.record_event(slot.event, self.stream)
        slot.copying = True

    # -- download

    def download(self, pointer: int, dtype: np.dtype, ranges: Iterable[tuple[int, int]],
                 read: Callable[[int, int, np.ndarray], list[Future]]) -> None:
        """Copy each flat range (at most a slot) of the elements at `pointer` into a
        slot and call read(start, stop, view) on this thread once it arrived; the
        tasks it returns must finish before the slot is reused."""
        arriving: deque = deque()
        try:
            for start, stop in ranges:
                slot = self._take()
                driver.copy_to_host_async(slot.address, pointer + start * dtype.itemsize,
                                          (stop - start) * dtype.itemsize, self.stream)
                driver.record_event(slot.event, self.stream)
                slot.copying = True
                arriving.append((slot, start, stop))
                if len(arriving) >= SLOTS - 1:
                    self._arrived(dtype, read, *arriving.popleft())
            while arriving:
                self._arrived(dtype, read, *arriving.popleft())
            for i in range(len(self.slots)):        # oldest first: errors in flat order
                self._wait_readers(self.slots[(self._next + i) % len(self.slots)])
        except BaseException:
            self._drain()
            raise

    def _arrived(self, dtype: np.dtype, read, slot: _Slot, start: int, stop: int) -> None:
        self._wait_copy(slot)
        slot.readers = list(read(start, stop, slot.view(dtype, stop - start)))

    # -- slots

    def _take(self) -> _Slot:
        slot = self.slots[self._next % len(self.slots)]
        self._next += 1
        self._wait_readers(slot)
        self._wait_copy(slot)
        return slot

    def _wait_copy(self, slot: _Slot) -> None:
        if slot.copying:
            began = time.perf_counter()
            driver.event_synchronize(slot.event, context="staging copy")
            self.waits.copies += time.perf_counter() - began
            slot.copying = False

    def _wait_readers(self, slot: _Slot) -> None:
        if slot.readers:
            began = time.perf_counter()
            readers, slot.readers = slot.readers, []
            gather(readers)
            self.waits.host += time.perf_counter() - began

    def _drain(self) -> None:
        """After an error: let every task finish and every copy land before the
        slots may be freed."""
        for slot in self.slots:
            for future in slot.readers:
                future.exception()
            slot.readers = []
        try:
            driver.stream_synchronize(self.stream)
        except Exception:               # noqa: BLE001 - the first error is the one to report
            pass
        for slot in self.slots:
            slot.copying = False

    def finish(self) -> None:
        """Wait for every copy queued (an upload's last ones)."""
        began = time.perf_counter()
        driver.stream_synchronize(self.stream, context="staging copies")
        self.waits.copies += time.perf_counter() - began
        for slot in self.slots:
            slot.copying = False

    def close(self) -> None:
        for slot in self.slots:
            if slot.address:
                _quietly(driver.free_host, slot.address)
            _quietly(driver.destroy_event, slot.event)
        self.slots = []
        if self.stream:
            _quietly(driver.destroy_stream, self.stream)
            self.stream = 0


def _fill(view: np.ndarray, offset: int, make_block: Callable[[int], np.ndarray], k: int) -> None:
    block = make_block(k)
    view[offset:offset + len(block)] = block


def _quietly(fn, *args) -> None:
    """Cleanup after a fault: the context refuses every call, and that second
    error must not hide the first."""
    try:
        fn(*args)
    except CudaError:
        pass
