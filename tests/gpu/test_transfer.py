"""Pinned staging slots on the fake driver (device memory is host memory): every
element arrives, errors surface in flat order, and nothing is left running or
allocated after one."""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest
from fakecuda.device import FakeDevice

from cubinrun.gpu import driver, transfer
from cubinrun.hostdata.threads import submit
from cubinrun.gpu.transfer import Staging


@pytest.fixture
def fake(monkeypatch):
    device = FakeDevice(lambda: 0)
    monkeypatch.setattr(driver, "call", device)
    monkeypatch.setattr(transfer, "SLOT_BYTES", 4096)
    return device


def device_array(fake, count: int, dtype=np.float32) -> tuple[int, np.ndarray]:
    pointer = fake.cuMemAlloc(count * np.dtype(dtype).itemsize)
    view = np.ctypeslib.as_array((ctypes.c_char * (count * np.dtype(dtype).itemsize))
                                 .from_address(pointer)).view(dtype)
    return pointer, view


def test_upload_fills_every_element_through_the_slots(fake):
    count, block = 10_007, 128
    pointer, on_device = device_array(fake, count)
    staging = Staging(1 << 20)                                 # capped at 4096 bytes
    staging.upload(pointer, np.dtype(np.float32), count, block,
                   lambda k: np.arange(k * block, min(count, (k + 1) * block), dtype=np.float32))
    staging.finish()
    staging.close()
    assert np.array_equal(on_device, np.arange(count, dtype=np.float32))
    assert fake.calls.count("cuMemcpyHtoDAsync") == -(-count // 1024)
    assert list(fake.memory) == [pointer]                      # the slots were freed


def test_an_upload_error_waits_for_every_task_before_it_is_raised(fake):
    pointer, _ = device_array(fake, 5000)
    staging = Staging(4096)
    running = []

    def make(k: int) -> np.ndarray:
        if k == 5:
            raise RuntimeError("block 5")
        running.append(k)
        time.sleep(0.001)
        running.remove(k)
        return np.zeros(100, np.float32)
    with pytest.raises(RuntimeError, match="block 5"):
        staging.upload(pointer, np.dtype(np.float32), 5000, 100, make)
    assert running == []                      # no task still writes into a slot
    staging.close()


def test_download_errors_come_in_flat_order(fake):
    count = 8192                              # 8 slots of 1024 floats
    pointer, on_device = device_array(fake, count)
    on_device[:] = np.arange(count)
    staging = Staging(4096)
    later_failed = threading.Event()
    seen = []

    def check(start: int, view: np.ndarray) -> None:
        if start == 1024:                     # the earlier error happens later in time
            later_failed.wait(5)
            raise ValueError("first in flat order")
        if start == 2048:
            later_failed.set()
            raise ValueError("second in flat order")
        seen.append((start, view.copy()))

    def read(start: int, stop: int, view: np.ndarray) -> list:
        return [submit(check, start, view)]
    with pytest.raises(ValueError, match="first in flat order"):
        staging.download(pointer, np.dtype(np.float32), [(a, a + 1024) for a in range(0, count,
                                                                                     1024)], read)
    staging.close()
    assert all(np.array_equal(v, np.arange(s, s + 1024)) for s, v in seen)


def test_download_hands_over_each_range_once_in_order(fake):
    count = 5000
    pointer, on_device = device_array(fake, count, np.int16)
    on_device[:] = np.arange(count)
    staging = Staging(4096)
    ranges = [(a, min(count, a + 2048)) for a in range(0, count, 2048)]
    got = []
    staging.download(pointer, np.dtype(np.int16), ranges,
                     lambda a, b, view: got.append((a, b, view.copy())) or [])
    staging.close()
    assert [(a, b) for a, b, _ in got] == ranges
    assert np.array_equal(np.concatenate([v for _, _, v in got]), np.arange(count))


def test_ordered_results_come_in_order_with_few_made_ahead():
    from cubinrun.hostdata.threads import ordered
    made, ahead = [], 3

    def task(k: int) -> int:
        made.append(k)
        time.sleep(0.001 * (k % 3))            # finishing out of order
        return k
    got = []
    for value in ordered((lambda k=k: task(k) for k in range(40)), ahead=ahead):
        assert len(made) <= len(got) + ahead    # never more than `ahead` beyond the reader
        got.append(value)
    assert got == list(range(40))
    with pytest.raises(ZeroDivisionError):      # an error surfaces in its place
        list(ordered((lambda k=k: 1 // (k - 5) for k in range(10)), ahead=ahead))
