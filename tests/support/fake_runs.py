"""Runs on the fake driver (tests/fakecuda): briefly timed, kept in this
process (`in_process`) or in real worker processes that install the fake
themselves (`workers`), a kernel played by writing into the fake's memory
(play_kernel), and results compared across the workers that ran them."""
from __future__ import annotations

import pytest

from cubinrun.runs import executor

FAST = ("--warmup", "1", "--rep", "1")
PER_RUN = ("timing", "throughput", "wall_s", "stages_s", "device")   # may differ by worker


@pytest.fixture
def in_process(monkeypatch):
    """Several runs, still in this process, so the patched fake driver answers."""
    monkeypatch.setattr(executor, "ProcessExecutor",
                        lambda options, *a, **k: executor.InlineExecutor(options))


@pytest.fixture
def workers(monkeypatch, fake_libcuda):
    """Worker processes on the fake driver: they install it themselves."""
    monkeypatch.setattr(executor, "WORKER_SETUP", "fakecuda.worker:install")
    return monkeypatch


def play_kernel(device, fake_libcuda, write):
    """After each launch, `write(out_pointer, launch_number)` plays the kernel, once:
    at the first synchronise after it (the uploads' stream is synchronised too)."""
    played = [0]

    def synchronise(stream):
        launches = fake_libcuda.launches()
        if len(launches) > played[0]:
            played[0] = len(launches)
            out = int.from_bytes(launches[-1].params[2], "little")
            write(out, len(launches))
    device.cuStreamSynchronize = synchronise


def comparable(result: dict) -> dict:
    """A result without what depends on the worker that ran it."""
    return {k: v for k, v in result.items() if k not in PER_RUN}


def fake_uuid(index: int) -> str:
    return f"GPU-face0000-0000-0000-0000-0000000000{index:02x}"
