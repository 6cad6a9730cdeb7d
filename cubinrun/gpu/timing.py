"""Time a kernel with device events, without timing the host: the helper
kernels, the sampler and the event offset every timer shares.

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
  (event_offset_us) and subtracted from every sample; bench/timing/event_offset.py has
  the measurements behind this (the hot slope agrees with ncu within 1.5%).
- The number of samples follows a time budget (warm-up and repetitions in ms,
  as `triton.testing.do_bench` does), bounded so that a tiny kernel does not
  queue millions of launches.

After each sample a short probe kernel measures the SM clock (cycles over
global-timer nanoseconds on its SM), so every sample says at what clock it was
timed: samples taken while the GPU throttled are dropped (gpu/timers/throttle.py)
and a comparison can tell a slower kernel from a throttled GPU. The offset is
measured once per `TimingKernels` (once per device in a multi-run command): it
is the event pair's cost, not the kernel's.

The timers themselves are in gpu/timers/.
"""
from __future__ import annotations

import itertools
import math
import statistics
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable, Sequence

from . import driver
from ..limits import MAX_SAMPLES

MIN_SAMPLES = 10
# nvbench's rule: a sample timed below this fraction of the highest SM clock is
# the GPU's state, not the kernel's speed (timers/throttle.py)
THROTTLE_FRACTION = 0.75
BATCH = 64                       # samples queued behind one spin
CALIBRATION_REPEATS = (1, 2, 4, 8, 16)   # launches per pair when measuring the offset
# Pairs per repeat count: with 32 the offset varied by 0.27 us between runs on
# the H200; the median's error shrinks as 1/sqrt(n), and 256 x 31 empty
# launches cost ~0.05 s.
CALIBRATION_SAMPLES = 256
CALIBRATION_BATCH_LAUNCHES = 256
ESTIMATE_LAUNCHES = 5
# A launch at least this long is estimated from one launch: its time is far
# above the timer's noise, and a tune of a 10 ms kernel should not pay for 5
# more (with the warm-up's and the sample cost's, 20 launches a point).
LONG_LAUNCH_MS = 1.0
MIN_SPIN_NS = 200_000
FIRST_SPIN_NS = 2_000_000
MAX_SPIN_NS = 10_000_000
FLUSH_THREADS = 256


@dataclass(frozen=True)
class TimingOptions:
    warmup_ms: float = 25.0
    rep_ms: float = 100.0        # the budget: with max_noise, the ceiling
    l2: str = "cold"             # "cold": flush before each sample; "hot": no flush
    raw_events: bool = False     # True: report event pairs as measured, offset kept
    timer: str = "events"        # events, cupti or graph (gpu/timers/)
    max_noise: float | None = None   # stop once the median's relative noise is below this
    min_samples: int = MIN_SAMPLES   # ... but not before this many samples


@dataclass(frozen=True)
class Timed:
    samples_us: list[float]      # one launch's device time each, the offset subtracted
    event_offset_us: float | None   # subtracted from every sample; None: raw pairs or none used
    sm_clock_mhz: list[float | None] = field(default_factory=list)  # per kept sample; None: no probe record
    dropped: int = 0             # pairs no longer than the offset: they timed nothing
    throttled: int = 0           # samples taken below 75% of the run's highest clock
    timer: str = "events"
    stopped: str = "budget"      # "noise": --max-noise was met before the budget ran out
    launches_per_sample: int = 1     # the graph timer's launches per replay
    graph_startup_us: float | None = None   # the graph timer's: added to each launch (graph.py)


@dataclass(frozen=True)
class Pairs:
    """What the sampler measured: each event pair's time and, when probed, the
    SM clock just after it (None where the probe left nothing)."""
    pairs_us: list[float]
    clocks_mhz: list[float | None]
    stopped_early: bool = False


# The helper kernels' signatures: flush, spin, empty, clock.
HELPER_SIGNATURES = (("*u8", "u64", "*u32"), ("u64", "*u64"), (), ("*u64",))
_helpers_ahead = None       # a Future: the launchers being built by build_helpers_ahead


def _build_helpers() -> list:
    """The helper kernels' launchers, built at once: each build is a compiler
    process, so a cold cache waits for one (~0.25 s), not four."""
    from concurrent.futures import ThreadPoolExecutor
    from ..launcher import load_launcher
    with ThreadPoolExecutor(len(HELPER_SIGNATURES)) as pool:
        return list(pool.map(lambda signature: load_launcher(signature, 0), HELPER_SIGNATURES))


def build_helpers_ahead() -> None:
    """Start building the helper launchers on a thread (a run's runner does this
    while CUDA opens); `helper_launchers` then waits for them."""
    global _helpers_ahead
    if _helpers_ahead is None:
        from ..hostdata.threads import on_thread
        _helpers_ahead = on_thread(_build_helpers, name="cubinrun-helper-launchers")


def settle_helpers() -> None:
    """Wait for the builds started ahead, if any (a runner that closes leaves no
    build writing to the launcher cache behind it)."""
    if _helpers_ahead is not None:
        from concurrent.futures import wait
        wait([_helpers_ahead])


def helper_launchers() -> list:
    if _helpers_ahead is not None:
        try:
            return _helpers_ahead.result()
        except Exception:           # built again here, so that the error is raised in place
            pass
    return _build_helpers()


class TimingKernels:
    """The spin and L2-flush kernels (PTX shipped with the package), the buffer
    the flush reads and the spins' clock records, loaded once per device; also
    the event offset, measured on first use."""

    def __init__(self, device: driver.Device):
        ptx = resources.files("cubinrun").joinpath("data/timing_kernels.ptx").read_bytes()
        self.module = driver.load_module(ptx + b"\0", what="cubinrun timing kernels (PTX)")
        self.flush_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_l2_flush"))
        self.spin_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_spin"))
        self.empty_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_empty"))
        self.clock_fn = driver.handle_int(driver.get_function(self.module, "cubinrun_clock"))
        self.flush_launcher, self.spin_launcher, self.empty_launcher, self.clock_launcher = \
            helper_launchers()
        l2 = driver.device_attribute(device.handle, "L2_CACHE_SIZE")
        self.flush_bytes = max(2 * l2, 16 << 20) // 16 * 16
        self.flush_buffer = driver.alloc(self.flush_bytes)
        self.sink = driver.alloc(4)
        self.clocks = driver.alloc(MAX_SAMPLES * 16)      # {ns, cycles} per sample
        self.event_offset_us: float | None = None
        self.empty_launch_us: float | None = None   # an empty kernel's time in a stream of them
        self.graph_startup_us: float | None = None  # graph timer: what a graph hides (graph.py)
        self._flush_ms: float | None = None
        stream = driver.create_stream()
        driver.memset_async(self.flush_buffer, 0, self.flush_bytes, stream)
        driver.memset_async(self.clocks, 0, MAX_SAMPLES * 16, stream)
        driver.stream_synchronize(stream)
        sms = driver.device_attribute(device.handle, "MULTIPROCESSOR_COUNT")
        self.flush_grid = 4 * sms
        self.flush_config = self.flush_launcher.Config(self.flush_fn, block=(FLUSH_THREADS, 1, 1))
        self.spin_config = self.spin_launcher.Config(self.spin_fn, block=(1, 1, 1))
        self.empty_config = self.empty_launcher.Config(self.empty_fn, block=(1, 1, 1))
        self.clock_config = self.clock_launcher.Config(self.clock_fn, block=(1, 1, 1))

    def flush(self, stream: int) -> None:
        self.flush_launcher.launch(self.flush_config, self.flush_grid, 1, 1, stream,
                                   self.flush_buffer, self.flush_bytes // 16, self.sink)

    def spin(self, stream: int, nanoseconds: int) -> None:
        self.spin_launcher.launch(self.spin_config, 1, 1, 1, stream, nanoseconds, None)

    def probe_clock(self, stream: int, index: int) -> None:
        """Queue the clock probe; it writes sample `index`'s clock record."""
        self.clock_launcher.launch(self.clock_config, 1, 1, 1, stream, self.clocks + 16 * index)

    def clear_clocks(self, stream: int) -> None:
        driver.memset_async(self.clocks, 0, MAX_SAMPLES * 16, stream)

    def read_clocks(self, count: int) -> list[float | None]:
        """The SM clock in MHz the probes of samples 0..count-1 measured (after a
        synchronise); None where a probe left no record (no GPU ran it)."""
        import numpy as np
        records = np.zeros((count, 2), dtype=np.uint64)
        driver.copy_to_host(records, self.clocks)
        return [1000.0 * float(c) / float(ns) if ns > 0 and c > 0 else None
                for ns, c in records]

    def empty(self, stream: int) -> None:
        self.empty_launcher.launch(self.empty_config, 1, 1, 1, stream)

    def flush_ms(self, stream: int) -> float:
        """What one L2 flush costs (with the clock probe), measured on first use."""
        if self._flush_ms is None:
            self._flush_ms = estimate_ms(after(self.flush, lambda s: self.probe_clock(s, 0)),
                                         stream)
        return self._flush_ms

    def close(self) -> None:
        driver.free_quietly(self.flush_buffer)
        driver.free_quietly(self.sink)
        driver.free_quietly(self.clocks)


def sample_count(budget_ms: float, estimate_ms: float, least: int = MIN_SAMPLES) -> int:
    """Samples that fit the budget, at least `least` (--min-samples) and at most MAX_SAMPLES."""
    if estimate_ms <= 0:
        return MAX_SAMPLES
    return max(least, min(MAX_SAMPLES, math.ceil(budget_ms / estimate_ms)))


def after(first: Callable[[int], None], then: Callable[[int], None]) -> Callable[[int], None]:
    def both(stream: int) -> None:
        first(stream)
        then(stream)
    return both


@dataclass(frozen=True)
class Estimate:
    ms: float                   # per launch
    launches: int               # launches it took


def estimate(launch: Callable[[int], None], stream: int) -> Estimate:
    """The time of one launch; when that is shorter than LONG_LAUNCH_MS, the mean
    of ESTIMATE_LAUNCHES more back to back: enough to size the budget."""
    first = _timed_ms(launch, stream, 1)
    if first >= LONG_LAUNCH_MS:
        return Estimate(first, 1)
    return Estimate(_timed_ms(launch, stream, ESTIMATE_LAUNCHES) / ESTIMATE_LAUNCHES,
                    1 + ESTIMATE_LAUNCHES)


def estimate_ms(launch: Callable[[int], None], stream: int) -> float:
    return estimate(launch, stream).ms


def _timed_ms(launch: Callable[[int], None], stream: int, launches: int) -> float:
    """Event time around `launches` back-to-back launches."""
    start, end = driver.create_event(), driver.create_event()
    try:
        driver.stream_synchronize(stream)
        driver.record_event(start, stream)
        for _ in range(launches):
            launch(stream)
        driver.record_event(end, stream)
        driver.stream_synchronize(stream, context="timing estimate")
        return driver.elapsed_ms(start, end)
    finally:
        driver.destroy_event(start)
        driver.destroy_event(end)


def sample(stream: int, kernels: TimingKernels, inside: Callable[[int], None],
           count: int, per_batch: int = BATCH,
           before: Callable[[int], None] | None = None,
           progress: Callable[[int, int], None] | None = None,
           clocks: bool = False,
           enough: Callable[[list[float]], bool] | None = None) -> Pairs:
    """Up to `count` event pairs around `inside(stream)`, in microseconds.

    `before(stream)`, if given, is queued ahead of each pair (the L2 flush).
    Pairs are queued in batches of `per_batch`, each behind a spin kernel.
    `clocks`: a clock probe follows each pair. Once a batch is queued, the
    batches before it are read while it runs: the GPU never idles between
    batches (waiting for each batch first read small kernels 1-5% high on the
    H200), and the host never runs more than two batches ahead.
    `enough(pairs so far)` is then asked about them: True stops sampling after
    the batch just queued, so a run that stops early samples the kernel
    exactly as one that spends its budget.
    """
    if clocks:
        kernels.clear_clocks(stream)
    pairs: list[tuple] = []
    times: list[float] = []
    spin_ns = FIRST_SPIN_NS
    stopped = False
    try:
        for first in range(0, count, per_batch):
            batch = [(driver.create_event(), driver.create_event())
                     for _ in range(min(per_batch, count - first))]
            done = len(pairs)               # the pairs of earlier batches
            pairs.extend(batch)
            kernels.spin(stream, spin_ns)
            queued_at = time.perf_counter_ns()
            for index, (start, end) in enumerate(batch, first):
                if before:
                    before(stream)
                driver.record_event(start, stream)
                inside(stream)
                driver.record_event(end, stream)
                if clocks:
                    kernels.probe_clock(stream, index)
            if first == 0:
                # Size later spins from the first batch, queued behind a generous spin
                # into an empty queue. Measured once: a later one may be slowed by the
                # host reading its predecessor, and feeding that back would grow the spin.
                spin_ns = min(MAX_SPIN_NS, max(MIN_SPIN_NS, 2 * (time.perf_counter_ns() - queued_at)))
            if progress:
                progress(first + len(batch), count)
            if done:
                # Never more than two batches queued: the host waits for the one
                # before this to end. A host far ahead would fill the launch queue
                # and then feed it a command at a time, and a run that spends its
                # budget would sample differently from one --max-noise stops early.
                driver.event_synchronize(pairs[done - 1][1], context="timed launches")
                times.extend(1000.0 * driver.elapsed_ms(start, end)
                             for start, end in pairs[len(times):done])
                if enough is not None and first + len(batch) < count and enough(times):
                    stopped = True
                    if progress:
                        progress(count, count)      # done: a progress line clears itself
                    break
        driver.stream_synchronize(stream, context="timed launches")
        times.extend(1000.0 * driver.elapsed_ms(start, end) for start, end in pairs[len(times):])
        probed = kernels.read_clocks(len(times)) if clocks else [None] * len(times)
        return Pairs(times, probed, stopped)
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
    return line_from_medians(medians)[0]


def line_from_medians(medians: dict[int, float]) -> tuple[float, float]:
    """(offset, per-launch slope) of offset_from_medians."""
    repeats = sorted(medians)
    if len(repeats) < 2:
        raise ValueError("the offset needs pairs around at least two launch counts")
    slope = least_squares_slope(repeats, [medians[r] for r in repeats])
    return max(0.0, medians[repeats[0]] - repeats[0] * slope), slope


def least_squares_slope(xs: list[float], ys: list[float]) -> float:
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    return (sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
            / sum((x - mean_x) ** 2 for x in xs))


def event_calibration(stream: int, kernels: TimingKernels) -> tuple[float, float]:
    """(the event offset, the empty kernel's per-launch time in a stream), in us.

    The pairs are taken as the samples are, a clock probe after each, so that
    whatever the probe changes in the next pair's cost is in the offset too.
    The launch counts take turns pair by pair rather than one after another: a
    GPU still leaving its idle clock slows the first pairs, and had those all
    been R = 1 the slope would be too low and the offset too high (on the H200
    once enough to cancel a 3 us kernel's every sample). Pairs taken below 75%
    of the highest clock are left out, as the samples' are (timers/throttle)."""
    turns = itertools.cycle(CALIBRATION_REPEATS)

    def empties(s: int) -> None:
        for _ in range(next(turns)):
            kernels.empty(s)
    rounds = len(CALIBRATION_REPEATS)
    per_batch = rounds * max(1, CALIBRATION_BATCH_LAUNCHES // sum(CALIBRATION_REPEATS))
    got = sample(stream, kernels, empties, CALIBRATION_SAMPLES * rounds,
                 per_batch=per_batch, clocks=True)
    kept = at_full_clock(got.clocks_mhz)
    medians = {}
    for turn, repeats in enumerate(CALIBRATION_REPEATS):
        pairs = [p for p, keep in zip(got.pairs_us[turn::rounds], kept[turn::rounds]) if keep]
        medians[repeats] = statistics.median(pairs)
    return line_from_medians(medians)


def at_full_clock(clocks_mhz: Sequence[float | None],
                  fraction: float = THROTTLE_FRACTION) -> list[bool]:
    """Per sample, whether it was taken at `fraction` of the highest clock
    measured or more; a sample without a clock (no probe record) counts as kept."""
    known = [c for c in clocks_mhz if c is not None]
    floor = fraction * max(known) if known else 0.0
    return [c is None or c >= floor for c in clocks_mhz]


def sample_cost_ms(inside: Callable[[int], None], stream: int, kernels: TimingKernels,
                   flush: Callable[[int], None] | None = None,
                   known_ms: float | None = None) -> float:
    """What one sample costs the GPU: the flush (cold), what is timed and the
    clock probe after it. The budget is what sampling takes, as do_bench's is
    (its estimate times its cache flush too): counting the kernel alone made a
    6 us kernel's 100 ms cold budget take 0.5 s. `known_ms`, the warm-up's
    estimate of what is timed: when that is a long launch, the flush's cost
    (measured once) is added to it rather than launching the pair again."""
    if known_ms is not None and known_ms >= LONG_LAUNCH_MS:
        return known_ms + (kernels.flush_ms(stream) if flush else 0.0)
    timed = after(flush, inside) if flush else inside
    return estimate_ms(after(timed, lambda s: kernels.probe_clock(s, 0)), stream)


def warm_up(launch: Callable[[int], None], stream: int, options: TimingOptions) -> float:
    """Launch for the warm-up budget, the estimate's launches included (so a
    long kernel with a short budget is launched once or twice, not ten times);
    returns the per-launch estimate (ms)."""
    first = estimate(launch, stream)
    wanted = math.ceil(options.warmup_ms / first.ms) if first.ms > 0 else MAX_SAMPLES
    for _ in range(min(MAX_SAMPLES, wanted) - first.launches):
        launch(stream)
    return first.ms


def offset_us(stream: int, kernels: TimingKernels, options: TimingOptions) -> float | None:
    """The event offset to subtract (measured once per TimingKernels), or None for raw pairs."""
    if options.raw_events:
        return None
    return calibrated(stream, kernels).event_offset_us


def calibrated(stream: int, kernels: TimingKernels) -> TimingKernels:
    """`kernels`, with the event offset and the empty kernel's time measured (once)."""
    if kernels.event_offset_us is None:
        kernels.event_offset_us, kernels.empty_launch_us = event_calibration(stream, kernels)
    return kernels


def batch_size(count: int, options: TimingOptions) -> int:
    """Samples per batch: with --max-noise the stopping rule is asked after each
    batch, so batches are a tenth of the budget's samples (at least
    --min-samples), letting a steady kernel stop early."""
    if options.max_noise is None:
        return BATCH
    return max(1, min(BATCH, max(options.min_samples, math.ceil(count / 10))))


def corrected(samples: list[float], offset: float) -> tuple[list[float], int]:
    """The samples less the event offset, and how many were dropped: a pair
    that took no longer than the offset timed nothing (a timer glitch; seen
    once in ~1700 samples of a 6.5 us kernel), and a 0 would pose as the
    kernel's minimum. If every sample is that short, they are kept, at 0."""
    kept = [sample - offset for sample in samples if sample > offset]
    if not kept:
        return [0.0] * len(samples), 0
    return kept, len(samples) - len(kept)


def timed_something(samples: list[float], offset: float) -> list[bool]:
    """Which samples corrected() keeps (all of them when none would be)."""
    keep = [sample > offset for sample in samples]
    return keep if any(keep) else [True] * len(samples)
