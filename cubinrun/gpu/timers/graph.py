"""The graph timer: back-to-back launches captured in one CUDA graph, replayed.

For kernels shorter than their launch: from the host each launch costs ~4 us
(bench/launch/launch_overhead.py), so back-to-back launches of a 2 us kernel leave the
GPU waiting between them, and even behind a spin each event pair adds its own
~2 us. A graph replays its launches without the host, so the time of one replay
over its launch count is the kernel's time in a steady stream of launches, as
Triton's `do_bench_cudagraph` measures it. L2 stays hot (nothing can be flushed
between the launches of one replay). Each replay is one sample: an event pair
around it, the event offset subtracted once, divided by the launches.

A graph also starts each kernel while the one before it drains, which a
stream does not, nor ncu's replay: on the H200 an empty kernel takes 0.51 us a
node in a graph, 1.40 us a launch in a stream, 1.25 us under ncu; a 3 us
vector add read 25% below ncu per node. That start-up is the kernel's too, so
the graph timer adds it back to every launch, measured once per device on the
empty kernel (its time in a stream less its time a node: `graph_startup_us`),
as the event offset is measured on it and subtracted. `--raw-events` adds
nothing: the time per node as do_bench_cudagraph reads it.
"""
from __future__ import annotations

import math
import statistics
from typing import Callable

from .. import driver
from ...limits import MAX_GRAPH_LAUNCHES
from ..timing import (Timed, TimingKernels, TimingOptions, batch_size, calibrated, offset_us,
                      sample, sample_cost_ms, sample_count, warm_up)
from . import noise
from .finish import finish, per_launch_us

# GPU time of one replay: long enough that the event pair's offset is under
# 0.2% of it, short enough that a 100 ms budget holds ~100 replays.
REPLAY_MS = 1.0
# replays of empty kernels that measure the start-up a graph hides (~30 ms)
STARTUP_REPLAYS = 32


def launches_per_graph(estimate_ms: float) -> int:
    if estimate_ms <= 0:
        return MAX_GRAPH_LAUNCHES
    return max(1, min(MAX_GRAPH_LAUNCHES, math.ceil(REPLAY_MS / estimate_ms)))


class CapturedLaunches:
    """`launches` launches captured from `launch(stream)` into an instantiated graph."""

    def __init__(self, launch: Callable[[int], None], stream: int, launches: int):
        driver.begin_capture(stream)
        try:
            for _ in range(launches):
                launch(stream)
        except BaseException:
            _abandon_capture(stream)    # the stream must not stay capturing
            raise
        graph = driver.end_capture(stream)
        try:
            self.graph_exec = driver.instantiate_graph(graph)
        except BaseException:
            driver.destroy_graph(graph)
            raise
        self.graph = graph
        self.launches = launches

    def replay(self, stream: int) -> None:
        driver.launch_graph(self.graph_exec, stream)

    def close(self) -> None:
        driver.destroy_graph(self.graph, self.graph_exec)


def _abandon_capture(stream: int) -> None:
    """End a capture a failed launch broke, dropping its graph; an error here
    (the driver may call the capture invalidated) must not hide the launch's."""
    from ...errors import CudaError
    try:
        driver.destroy_graph(driver.end_capture(stream))
    except CudaError:
        pass


def graph_startup_us(stream: int, kernels: TimingKernels) -> float:
    """What a graph hides of each launch's start (see the module's docstring):
    an empty kernel's time in a stream less its time per node, in us, measured
    once per TimingKernels."""
    if kernels.graph_startup_us is None:
        empty_us = calibrated(stream, kernels).empty_launch_us
        captured = CapturedLaunches(kernels.empty, stream, launches_per_graph(empty_us / 1000))
        try:
            captured.replay(stream)
            pairs = sample(stream, kernels, captured.replay, STARTUP_REPLAYS).pairs_us
        finally:
            captured.close()
        per_node = (statistics.median(pairs) - kernels.event_offset_us) / captured.launches
        kernels.graph_startup_us = max(0.0, empty_us - per_node)
    return kernels.graph_startup_us


def measure(launch: Callable[[int], None], stream: int, kernels: TimingKernels,
            options: TimingOptions,
            progress: Callable[[int, int], None] | None = None) -> Timed:
    estimate = warm_up(launch, stream, options)
    offset = offset_us(stream, kernels, options)
    startup = None if options.raw_events else graph_startup_us(stream, kernels)
    captured = CapturedLaunches(launch, stream, launches_per_graph(estimate))
    try:
        captured.replay(stream)         # the first replay uploads the graph
        per_sample = sample_cost_ms(captured.replay, stream, kernels)
        count = sample_count(options.rep_ms, per_sample, options.min_samples)
        enough = None
        if options.max_noise is not None:
            rule = noise.Rule(options.max_noise, options.min_samples)

            def enough(pairs: list[float]) -> bool:
                return rule.met(per_launch_us(pairs, offset, captured.launches, startup)[0])
        got = sample(stream, kernels, captured.replay, count, batch_size(count, options),
                     progress=progress, clocks=True, enough=enough)
    finally:
        captured.close()
    return finish(got, offset, "graph", captured.launches, startup_us=startup)
