"""Time a kernel with device events, without timing the host.

Three pitfalls shape this (cuda-facts.md, "Timing pitfalls"):

- An event pair around a launch on an idle GPU also times the host's launch
  latency. Each batch of samples therefore starts behind a spin kernel that
  keeps the GPU busy while the host queues the whole batch; by the time the
  GPU reaches a sample, its launch is long queued.
- A cold-L2 flush that writes a large buffer leaves dirty lines the measured
  kernel must write back. The flush here reads a buffer twice the L2's size,
  which leaves L2 holding clean lines of that buffer only.
- The number of samples follows a time budget (warm-up and repetitions in ms,
  as `triton.testing.do_bench` does), bounded so that a tiny kernel does not
  queue millions of launches.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from importlib import resources
from typing import Callable

from . import driver

MIN_SAMPLES = 10
MAX_SAMPLES = 10_000
BATCH = 64                       # samples queued behind one spin
ESTIMATE_LAUNCHES = 5
MIN_SPIN_NS = 200_000
FIRST_SPIN_NS = 2_000_000
MAX_SPIN_NS = 10_000_000
FLUSH_THREADS = 256


@dataclass(frozen=True)
class TimingOptions:
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    l2: str = "cold"             # "cold": flush before each sample; "hot": no flush


class TimingKernels:
    """The spin and L2-flush kernels (PTX shipped with the package) and the
    buffer the flush reads, loaded once per device."""

    def __init__(self, device: driver.Device):
        from .launcher import load_launcher
        ptx = resources.files("cubinrun").joinpath("data/timing_kernels.ptx").read_bytes()
        self.module = driver.load_module(ptx + b"\0", what="cubinrun timing kernels (PTX)")
        self.flush_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_l2_flush"))
        self.spin_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_spin"))
        self.flush_launcher = load_launcher(["*u8", "u64", "*u32"], 0)
        self.spin_launcher = load_launcher(["u64"], 0)
        l2 = driver.device_attribute(device.handle, "L2_CACHE_SIZE")
        self.flush_bytes = max(2 * l2, 16 << 20) // 16 * 16
        self.flush_buffer = driver.alloc(self.flush_bytes)
        self.sink = driver.alloc(4)
        stream = driver.create_stream()
        driver.memset_async(self.flush_buffer, 0, self.flush_bytes, stream)
        driver.stream_synchronize(stream)
        sms = driver.device_attribute(device.handle, "MULTIPROCESSOR_COUNT")
        self.flush_grid = 4 * sms
        self.flush_config = self.flush_launcher.Config(self.flush_fn, block=(FLUSH_THREADS, 1, 1))
        self.spin_config = self.spin_launcher.Config(self.spin_fn, block=(1, 1, 1))

    def flush(self, stream: int) -> None:
        self.flush_launcher.launch(self.flush_config, self.flush_grid, 1, 1, stream,
                                   self.flush_buffer, self.flush_bytes // 16, self.sink)

    def spin(self, stream: int, nanoseconds: int) -> None:
        self.spin_launcher.launch(self.spin_config, 1, 1, 1, stream, nanoseconds)

    def close(self) -> None:
        driver.free_quietly(self.flush_buffer)
        driver.free_quietly(self.sink)


def sample_count(budget_ms: float, estimate_ms: float) -> int:
    if estimate_ms <= 0:
        return MAX_SAMPLES
    return max(MIN_SAMPLES, min(MAX_SAMPLES, math.ceil(budget_ms / estimate_ms)))


def estimate_ms(launch: Callable[[int], None], stream: int) -> float:
    """Mean time of a few back-to-back launches: enough to size the budget."""
    start, end = driver.create_event(), driver.create_event()
    driver.stream_synchronize(stream)
    driver.record_event(start, stream)
    for _ in range(ESTIMATE_LAUNCHES):
        launch(stream)
    driver.record_event(end, stream)
    driver.stream_synchronize(stream, context="timing estimate")
    elapsed = driver.elapsed_ms(start, end)
    driver.destroy_event(start)
    driver.destroy_event(end)
    return elapsed / ESTIMATE_LAUNCHES


def time_kernel(launch: Callable[[int], None], stream: int, kernels: TimingKernels,
                options: TimingOptions,
                progress: Callable[[int, int], None] | None = None) -> list[float]:
    """Samples of one launch's device time in microseconds.

    `launch(stream)` queues one launch of the kernel on `stream`.
    """
    estimate = estimate_ms(launch, stream)
    for _ in range(sample_count(options.warmup_ms, estimate)):
        launch(stream)
    count = sample_count(options.rep_ms, estimate)
    pairs = [(driver.create_event(), driver.create_event()) for _ in range(count)]
    spin_ns = FIRST_SPIN_NS
    for first in range(0, count, BATCH):
        batch = pairs[first:first + BATCH]
        kernels.spin(stream, spin_ns)
        queued_at = time.perf_counter_ns()
        for start, end in batch:
            if options.l2 == "cold":
                kernels.flush(stream)
            driver.record_event(start, stream)
            launch(stream)
            driver.record_event(end, stream)
        if first == 0:
            # Size later spins from the first batch, queued behind a generous spin
            # into an empty queue. Measured once: a later batch may wait for room
            # in a full launch queue, and feeding that back would grow the spin.
            spin_ns = min(MAX_SPIN_NS, max(MIN_SPIN_NS, 2 * (time.perf_counter_ns() - queued_at)))
        if progress:
            progress(first + len(batch), count)
    driver.stream_synchronize(stream, context="timed launches")
    samples = [1000.0 * driver.elapsed_ms(start, end) for start, end in pairs]
    for start, end in pairs:
        driver.destroy_event(start)
        driver.destroy_event(end)
    return samples
