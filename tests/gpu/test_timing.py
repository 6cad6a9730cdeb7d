"""Pure parts of the timing: the event offset's fit and the sample budget."""
from __future__ import annotations

import pytest

from cubinrun.gpu.timing import (
    MAX_SAMPLES, MIN_SAMPLES, corrected, offset_from_medians, sample_count)


def test_the_offset_is_what_one_pair_reads_beyond_the_per_launch_slope():
    # as measured for the empty kernel on the H200 (bench/timing/results/event_offset.json)
    medians = {1: 3.392, 2: 4.864, 4: 7.360, 8: 12.528, 16: 22.880}
    assert offset_from_medians(medians) == pytest.approx(2.10, abs=0.01)


def test_an_exact_line_gives_its_intercept_at_one_launch():
    medians = {r: 2.0 + 3.0 * r for r in (1, 2, 4, 8, 16)}
    assert offset_from_medians(medians) == pytest.approx(2.0)
    assert offset_from_medians({2: 8.0, 16: 50.0}) == pytest.approx(2.0)   # from R=2: 8 - 2*3


def test_noise_below_zero_means_nothing_to_subtract():
    assert offset_from_medians({1: 1.0, 2: 2.2, 4: 4.6}) == 0.0


def test_one_launch_count_is_not_enough():
    with pytest.raises(ValueError, match="at least two"):
        offset_from_medians({1: 3.0})


@pytest.mark.parametrize("budget, estimate, expected", [
    (100.0, 0.01, MAX_SAMPLES),        # a tiny kernel stops at the cap
    (100.0, 50.0, MIN_SAMPLES),        # a long one still gets the minimum
    (100.0, 1.0, 100),
    (100.0, 0.0, MAX_SAMPLES),         # too fast to measure: the cap
])
def test_sample_count_follows_the_budget_within_bounds(budget, estimate, expected):
    assert sample_count(budget, estimate) == expected


def test_pairs_no_longer_than_the_offset_are_dropped_and_counted():
    kept, dropped = corrected([6.5, 2.0, 6.7, 2.1, 6.6], offset=2.1)
    assert kept == pytest.approx([4.4, 4.6, 4.5]) and dropped == 2
    assert min(kept) > 0                    # a glitch never poses as the kernel's minimum


def test_raw_pairs_keep_every_sample_and_all_too_short_are_kept_at_zero():
    assert corrected([1.0, 2.0], offset=0.0) == ([1.0, 2.0], 0)
    assert corrected([1.0, 2.0], offset=3.0) == ([0.0, 0.0], 0)


class _Clock:
    """A stand-in for the driver's events: each launch advances the stream's
    clock by `per_launch_ms`; an event records the clock."""

    def __init__(self, per_launch_ms: float):
        self.per_launch_ms, self.now, self.launches = per_launch_ms, 0.0, 0
        self.events: dict[int, float] = {}

    def launch(self, stream: int) -> None:
        self.launches += 1
        self.now += self.per_launch_ms

    def create_event(self) -> int:
        self.events[len(self.events) + 1] = 0.0
        return len(self.events)

    def record_event(self, event: int, stream: int) -> None:
        self.events[event] = self.now

    def elapsed_ms(self, start: int, end: int) -> float:
        return self.events[end] - self.events[start]

    def stream_synchronize(self, stream: int, context: str = "") -> None:
        pass

    def event_synchronize(self, event: int, context: str = "") -> None:
        pass

    def destroy_event(self, event: int) -> None:
        pass


@pytest.mark.parametrize("per_launch_ms, warmup_ms, launches", [
    (4.0, 5.0, 2),          # a long kernel: 1 to estimate, 1 more for the 5 ms budget
    (4.0, 0.0, 1),          # no budget: the estimate's launch is the warm-up
    (20.0, 25.0, 2),
    (0.005, 25.0, 5000),    # a short one: 6 to estimate, then the rest of the budget
    (0.5, 1.0, 6),          # short: the estimate's 6 launches already exceed the budget
])
def test_the_warm_up_counts_the_estimates_launches(monkeypatch, per_launch_ms, warmup_ms,
                                                   launches):
    from cubinrun.gpu import timing
    clock = _Clock(per_launch_ms)
    monkeypatch.setattr(timing, "driver", clock)
    estimate = timing.warm_up(clock.launch, 0, timing.TimingOptions(warmup_ms=warmup_ms))
    assert estimate == pytest.approx(per_launch_ms) and clock.launches == launches


def test_a_long_launchs_sample_cost_is_its_estimate_and_the_flush_measured_once(monkeypatch):
    from cubinrun.gpu import timing
    clock = _Clock(4.0)
    monkeypatch.setattr(timing, "driver", clock)

    class Kernels:
        flushes = 0

        def flush_ms(self, stream):
            self.flushes += 1
            return 0.05
    kernels = Kernels()
    flush = lambda stream: None                                 # noqa: E731
    assert timing.sample_cost_ms(clock.launch, 0, kernels, flush, 4.0) == pytest.approx(4.05)
    assert timing.sample_cost_ms(clock.launch, 0, kernels, None, 4.0) == pytest.approx(4.0)
    assert clock.launches == 0 and kernels.flushes == 1


class _RampingGpu(_Clock):
    """Events that cost `pair_us` each pair, and empty launches that take three
    times as long until the GPU has run `ramp` of them (leaving its idle clock)."""

    def __init__(self, per_launch_us: float, pair_us: float, ramp: int):
        super().__init__(per_launch_us / 1000)
        self.pair_ms, self.ramp, self.recorded = pair_us / 1000, ramp, 0

    def launch(self, stream: int) -> None:
        self.launches += 1
        self.now += self.per_launch_ms * (3 if self.launches <= self.ramp else 1)

    def record_event(self, event: int, stream: int) -> None:
        self.recorded += 1
        if self.recorded % 2 == 0:          # the end of a pair: its cost
            self.now += self.pair_ms
        self.events[event] = self.now

    def empty(self, stream: int) -> None:
        self.launch(stream)

    def spin(self, stream: int, nanoseconds: int) -> None:
        pass

    def probe_clock(self, stream: int, index: int) -> None:
        pass

    def clear_clocks(self, stream: int) -> None:
        pass

    def read_clocks(self, count: int) -> list:
        return [None] * count


def test_the_offset_survives_a_gpu_leaving_its_idle_clock_during_calibration(monkeypatch):
    # 1.4 us empty kernels, 2.0 us per pair; the first 600 launches run at a
    # third of the speed. Had R = 1's pairs all come first (all slow), its
    # median would read 6.2 us and the offset ~4.8 us, more than a 3 us kernel.
    from cubinrun.gpu import timing
    gpu = _RampingGpu(per_launch_us=1.4, pair_us=2.0, ramp=600)
    monkeypatch.setattr(timing, "driver", gpu)
    offset, empty_us = timing.event_calibration(0, gpu)
    assert offset == pytest.approx(2.0, abs=0.01) and empty_us == pytest.approx(1.4, abs=0.01)
    assert gpu.launches == timing.CALIBRATION_SAMPLES * sum(timing.CALIBRATION_REPEATS)


def test_the_sampler_never_queues_more_than_two_batches(monkeypatch):
    # a host far ahead of the GPU fills its launch queue, which then times the host
    from cubinrun.gpu import timing
    gpu = _RampingGpu(per_launch_us=3.0, pair_us=2.0, ramp=0)
    monkeypatch.setattr(timing, "driver", gpu)
    synced: list[tuple[int, int]] = []          # (event waited for, launches queued then)
    gpu.event_synchronize = lambda event, context="": synced.append((event, gpu.launches))
    got = timing.sample(0, gpu, gpu.launch, 4 * 64, per_batch=64)
    assert got.pairs_us == pytest.approx([5.0] * 256)
    # after batch k is queued (64 k launches), the end of batch k - 1 is waited for
    ends = [2 * 64 * k for k in (1, 2, 3)]      # two events a pair, numbered from 1
    assert synced == [(end, 64 * (k + 1)) for k, end in zip((1, 2, 3), ends)]


def test_the_helper_launchers_built_ahead_are_the_ones_used(monkeypatch):
    """A runner starts the timing helpers' launchers while CUDA opens; the timing
    kernels wait for those builds instead of building again."""
    from cubinrun.gpu import timing
    built = []

    def fake_build():
        built.append(1)
        return ["flush", "spin", "empty", "clock"]
    monkeypatch.setattr(timing, "_helpers_ahead", None)
    monkeypatch.setattr(timing, "_build_helpers", fake_build)
    timing.build_helpers_ahead()
    timing.build_helpers_ahead()                    # once per process
    assert timing.helper_launchers() == ["flush", "spin", "empty", "clock"]
    assert timing.helper_launchers() == ["flush", "spin", "empty", "clock"] and built == [1]


def test_a_helper_build_that_failed_ahead_is_built_again_in_place(monkeypatch):
    from cubinrun.errors import BuildError
    from cubinrun.gpu import timing
    calls = []

    def fails_then_raises_here():
        calls.append(1)
        raise BuildError(f"compiler failed ({len(calls)})")
    monkeypatch.setattr(timing, "_helpers_ahead", None)
    monkeypatch.setattr(timing, "_build_helpers", fails_then_raises_here)
    timing.build_helpers_ahead()
    with pytest.raises(BuildError, match=r"\(2\)"):
        timing.helper_launchers()


def test_the_helper_signatures_build_as_launchers():
    from cubinrun.gpu import timing
    launchers = timing._build_helpers()
    assert [tuple(m.SIGNATURE) for m in launchers] == [tuple(s) for s in timing.HELPER_SIGNATURES]


def test_settling_waits_for_the_helper_builds_started_ahead(monkeypatch):
    import threading
    from cubinrun.gpu import timing
    release, finished = threading.Event(), []

    def slow_build():
        release.wait(5)
        finished.append(1)
        return []
    monkeypatch.setattr(timing, "_helpers_ahead", None)
    monkeypatch.setattr(timing, "_build_helpers", slow_build)
    timing.build_helpers_ahead()
    threading.Timer(0.1, release.set).start()
    timing.settle_helpers()
    assert finished == [1]
