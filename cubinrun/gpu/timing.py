"""Time a kernel with device events, without timing the host.

Four pitfalls shape this:

- An event pair around a launch on an idle GPU also times the host's launch
  latency. Each batch of samples therefore starts behind a spin kernel that
  keeps the GPU busy while the host queues the whole batch; by the time the
  GPU reaches a sample, its launch is long queued.
- A cold-L2 flush that writes a large buffer leaves dirty lines the measured
  kernel must write back. The flush here reads a buffer twice the L2's size,
  which leaves L2 holding clean lines of that buffer only.
- Even behind a spin, an event pair reads a near-constant ~2 us more than
  the profiler's kernel duration (ncu's gpu__time_duration): the pair's own
  cost. Back-to-back launches inside one pair pay it once, so the slope of
  pair time against launch count is the per-launch time, and
  pair(1 launch) - slope is the offset. It is measured on an empty kernel
  (event_offset_us) and subtracted from every sample; bench/event_offset.py has
  the measurements behind this (the hot slope agrees with ncu within 1.5%).
- The number of samples follows a time budget (warm-up and repetitions in ms,
  as `triton.testing.do_bench` does), bounded so that a tiny kernel does not
  queue millions of launches.

The spin before each batch also measures the SM clock (cycles over global-timer
nanoseconds on its SM), so every result says at what clock it was timed and a
comparison can tell a slower kernel from a throttled GPU. The offset is
measured once per `TimingKernels` (once per device in a multi-run command): it
is the event pair's cost, not the kernel's.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable

from . import driver

MIN_SAMPLES = 10
MAX_SAMPLES = 10_000
BATCH = 64                       # samples queued behind one spin
CALIBRATION_REPEATS = (1, 2, 4, 8, 16)   # launches per pair when measuring the offset
# Pairs per repeat count: with 32 the offset varied by 0.27 us between runs on
# the H200; the median's error shrinks as 1/sqrt(n), and 256 x 31 empty
# launches cost ~0.05 s.
CALIBRATION_SAMPLES = 256
CALIBRATION_BATCH_LAUNCHES = 256
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
    raw_events: bool = False     # True: report event pairs as measured, offset kept


@dataclass(frozen=True)
class Timed:
    samples_us: list[float]      # one launch's device time each, the offset subtracted
    event_offset_us: float | None   # subtracted from every sample; None: raw pairs
    sm_clock_mhz: list[float] = field(default_factory=list)   # one per batch, as measured
    dropped: int = 0             # pairs no longer than the offset: they timed nothing


CLOCK_SLOTS = 256               # spins that record the clock, reused round robin


class TimingKernels:
    """The spin and L2-flush kernels (PTX shipped with the package), the buffer
    the flush reads and the spins' clock records, loaded once per device; also
    the event offset, measured on first use."""

    def __init__(self, device: driver.Device):
        from ..launcher import load_launcher
        ptx = resources.files("cubinrun").joinpath("data/timing_kernels.ptx").read_bytes()
        self.module = driver.load_module(ptx + b"\0", what="cubinrun timing kernels (PTX)")
        self.flush_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_l2_flush"))
        self.spin_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_spin"))
        self.empty_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_empty"))
        self.flush_launcher = load_launcher(["*u8", "u64", "*u32"], 0)
        self.spin_launcher = load_launcher(["u64", "*u64"], 0)
        self.empty_launcher = load_launcher([], 0)
        l2 = driver.device_attribute(device.handle, "L2_CACHE_SIZE")
        self.flush_bytes = max(2 * l2, 16 << 20) // 16 * 16
        self.flush_buffer = driver.alloc(self.flush_bytes)
        self.sink = driver.alloc(4)
        self.clocks = driver.alloc(CLOCK_SLOTS * 16)
        self.event_offset_us: float | None = None
        stream = driver.create_stream()
        driver.memset_async(self.flush_buffer, 0, self.flush_bytes, stream)
        driver.memset_async(self.clocks, 0, CLOCK_SLOTS * 16, stream)
        driver.stream_synchronize(stream)
        sms = driver.device_attribute(device.handle, "MULTIPROCESSOR_COUNT")
        self.flush_grid = 4 * sms
        self.flush_config = self.flush_launcher.Config(self.flush_fn, block=(FLUSH_THREADS, 1, 1))
        self.spin_config = self.spin_launcher.Config(self.spin_fn, block=(1, 1, 1))
        self.empty_config = self.empty_launcher.Config(self.empty_fn, block=(1, 1, 1))

    def flush(self, stream: int) -> None:
        self.flush_launcher.launch(self.flush_config, self.flush_grid, 1, 1, stream,
                                   self.flush_buffer, self.flush_bytes // 16, self.sink)

    def spin(self, stream: int, nanoseconds: int, clock_slot: int | None = None) -> None:
        """`clock_slot`: record the spin's nanoseconds and cycles there (see read_clocks)."""
        record = None if clock_slot is None else self.clocks + 16 * (clock_slot % CLOCK_SLOTS)
        self.spin_launcher.launch(self.spin_config, 1, 1, 1, stream, nanoseconds, record)

    def read_clocks(self, count: int) -> list[float]:
        """The SM clock in MHz of the last `count` recording spins (after a synchronise);
        slots a spin did not fill (no GPU ran it) are left out."""
        import numpy as np
        records = np.zeros((CLOCK_SLOTS, 2), dtype=np.uint64)
        driver.copy_to_host(records, self.clocks)
        nanoseconds, cycles = records[:min(count, CLOCK_SLOTS)].T.astype(np.float64)
        return [1000.0 * c / ns for ns, c in zip(nanoseconds, cycles) if ns > 0 and c > 0]

    def empty(self, stream: int) -> None:
        self.empty_launcher.launch(self.empty_config, 1, 1, 1, stream)

    def close(self) -> None:
        driver.free_quietly(self.flush_buffer)
        driver.free_quietly(self.sink)
        driver.free_quietly(self.clocks)


def sample_count(budget_ms: float, estimate_ms: float) -> int:
    if estimate_ms <= 0:
        return MAX_SAMPLES
    return max(MIN_SAMPLES, min(MAX_SAMPLES, math.ceil(budget_ms / estimate_ms)))


def _after(first: Callable[[int], None], then: Callable[[int], None]) -> Callable[[int], None]:
    def both(stream: int) -> None:
        first(stream)
        then(stream)
    return both


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


def pair_samples(stream: int, kernels: TimingKernels, inside: Callable[[int], None],
                 count: int, per_batch: int = BATCH,
                 before: Callable[[int], None] | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 record_clock: bool = False) -> list[float]:
    """`count` event pairs around `inside(stream)`, in microseconds.

    `before(stream)`, if given, is queued ahead of each pair (the L2 flush).
    Pairs are queued in batches of `per_batch`, each behind a spin kernel,
    which records the SM clock in slot i for batch i when `record_clock`.
    """
    pairs = [(driver.create_event(), driver.create_event()) for _ in range(count)]
    spin_ns = FIRST_SPIN_NS
    try:
        for first in range(0, count, per_batch):
            batch = pairs[first:first + per_batch]
            kernels.spin(stream, spin_ns, first // per_batch if record_clock else None)
            queued_at = time.perf_counter_ns()
            for start, end in batch:
                if before:
                    before(stream)
                driver.record_event(start, stream)
                inside(stream)
                driver.record_event(end, stream)
            if first == 0:
                # Size later spins from the first batch, queued behind a generous spin
                # into an empty queue. Measured once: a later batch may wait for room
                # in a full launch queue, and feeding that back would grow the spin.
                spin_ns = min(MAX_SPIN_NS, max(MIN_SPIN_NS, 2 * (time.perf_counter_ns() - queued_at)))
            if progress:
                progress(first + len(batch), count)
        driver.stream_synchronize(stream, context="timed launches")
        return [1000.0 * driver.elapsed_ms(start, end) for start, end in pairs]
    finally:
        for start, end in pairs:
            driver.destroy_event(start)
            driver.destroy_event(end)


def offset_from_medians(medians: dict[int, float]) -> float:
    """The event offset from median pair times around R back-to-back launches.

    Pair(R) = offset + R x per-launch time; the per-launch time is the
    least-squares slope over R, and the offset is what a pair around one
    launch reads beyond it. Noise can only make a tiny offset negative: that
    means there is nothing to subtract.
    """
    repeats = sorted(medians)
    if len(repeats) < 2:
        raise ValueError("the offset needs pairs around at least two launch counts")
    slope = least_squares_slope(repeats, [medians[r] for r in repeats])
    return max(0.0, medians[repeats[0]] - repeats[0] * slope)


def least_squares_slope(xs: list[float], ys: list[float]) -> float:
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    return (sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
            / sum((x - mean_x) ** 2 for x in xs))


def event_offset_us(stream: int, kernels: TimingKernels) -> float:
    """What an event pair adds to the launch it brackets, measured on an empty kernel."""
    medians = {}
    for repeats in CALIBRATION_REPEATS:
        def empties(s: int, repeats: int = repeats) -> None:
            for _ in range(repeats):
                kernels.empty(s)
        samples = pair_samples(stream, kernels, empties, CALIBRATION_SAMPLES,
                               per_batch=max(1, CALIBRATION_BATCH_LAUNCHES // repeats))
        medians[repeats] = statistics.median(samples)
    return offset_from_medians(medians)


def time_kernel(launch: Callable[[int], None], stream: int, kernels: TimingKernels,
                options: TimingOptions,
                progress: Callable[[int, int], None] | None = None) -> Timed:
    """Samples of one launch's device time.

    `launch(stream)` queues one launch of the kernel on `stream`.
    """
    estimate = estimate_ms(launch, stream)
    for _ in range(sample_count(options.warmup_ms, estimate)):
        launch(stream)
    offset = None
    if not options.raw_events:
        if kernels.event_offset_us is None:
            kernels.event_offset_us = event_offset_us(stream, kernels)
        offset = kernels.event_offset_us
    flush = kernels.flush if options.l2 == "cold" else None
    # The budget is what sampling takes, as do_bench's is (its estimate times its
    # cache flush too): a cold sample costs the flush as well as the launch.
    # Counting the kernel alone made a 6 us kernel's 100 ms budget take 0.5 s.
    per_sample = estimate_ms(_after(flush, launch), stream) if flush else estimate
    count = sample_count(options.rep_ms, per_sample)
    samples = pair_samples(stream, kernels, launch, count, before=flush,
                           progress=progress, record_clock=True)
    kept, dropped = corrected(samples, offset or 0.0)
    return Timed(kept, offset, kernels.read_clocks(math.ceil(count / BATCH)), dropped)


def corrected(samples: list[float], offset: float) -> tuple[list[float], int]:
    """The samples less the event offset, and how many were dropped: a pair
    that took no longer than the offset timed nothing (a timer glitch; seen
    once in ~1700 samples of a 6.5 us kernel), and a 0 would pose as the
    kernel's minimum. If every sample is that short, they are kept, at 0."""
    kept = [sample - offset for sample in samples if sample > offset]
    if not kept:
        return [0.0] * len(samples), 0
    return kept, len(samples) - len(kept)
