"""`--energy`: joules per launch from NVML's energy counter.

The counter (nvml.energy_mj) is the board's energy since the driver loaded,
but it only moves every ~20-100 ms. Reading it at two arbitrary times one
second apart is off by up to one update period at each end, which is several
percent of the window: the naive way (read, launch for 1 s, read) gave a CV of
4.6% over five runs on the H200. So the window's edges are the counter's own
updates: poll until the value changes (time t_a, value E_a), keep the GPU busy
at least WINDOW_S, poll until it changes again (t_b, E_b); then
(E_b - E_a) / (t_b - t_a) is the board's average power over a window whose
energy and duration were read at the same instants. The launches run back to
back throughout (chunks of ~2 ms replayed from a CUDA graph, queued ahead, so
the GPU never waits for the host while the window is open, even for a kernel
shorter than its launch; hot L2), after a warm-up that lets the power settle.
A kernel the driver will not capture is launched directly instead
(`energy.graph` says which).

Joules per launch = average power x one launch's time in that stream (GPU
time of all the launches over their count, from an event pair). Nothing is
subtracted: it is the whole board's draw while running the kernel, idle
power included, as Kernel Tuner's NVML observer reports it (bench/energy/energy.py
measures the idle power next to it). The average SM clock over the window
comes from NVML too.
"""
from __future__ import annotations

import math
import statistics
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

from . import driver, nvml
from ..errors import CudaError
from ..limits import MAX_GRAPH_LAUNCHES

WINDOW_S = 1.0          # at least this long, edge to edge
WARM_S = 0.5            # back-to-back launches before the window opens
CHUNK_S = 0.002         # GPU time queued per chunk: the host polls NVML between chunks
IN_FLIGHT = 4           # chunks queued ahead of the GPU
EDGE_TIMEOUT_S = 2.0    # a counter that does not move in this long is broken


@dataclass(frozen=True)
class Energy:
    j_per_launch: float
    watts: float
    sm_clock_mhz: float | None      # NVML's SM clock, averaged over the window
    window_s: float                 # edge to edge
    launch_us: float                # one launch's time, back to back
    graph: bool = True              # the launches replayed from a CUDA graph

    def to_json(self) -> dict:
        return {"j_per_launch": self.j_per_launch, "watts": self.watts,
                "sm_clock_mhz": self.sm_clock_mhz, "window_s": self.window_s,
                "launch_us": self.launch_us, "graph": self.graph}


@dataclass(frozen=True)
class Window:
    joules: float
    seconds: float
    clocks_mhz: list[float]

    @property
    def watts(self) -> float:
        return self.joules / self.seconds


def edge_window(read_mj: Callable[[], int], now: Callable[[], float],
                keep_busy: Callable[[], None], read_clock: Callable[[], float],
                window_s: float, timeout_s: float = EDGE_TIMEOUT_S) -> Window:
    """The energy and time between two updates of the counter at least
    `window_s` apart, with `keep_busy()` called between polls."""
    def next_change(clocks: list[float] | None) -> tuple[int, float]:
        first, since = read_mj(), now()
        while True:
            keep_busy()
            if clocks is not None:
                clocks.append(read_clock())
            value, at = read_mj(), now()
            if value != first:
                return value, at
            if at - since > timeout_s:
                raise CudaError(f"NVML's energy counter did not change in {timeout_s:g} s",
                                call="nvmlDeviceGetTotalEnergyConsumption")
    start_mj, start = next_change(None)
    clocks: list[float] = []
    while now() - start < window_s:
        keep_busy()
        clocks.append(read_clock())
    end_mj, end = next_change(clocks)
    return Window((end_mj - start_mj) / 1000.0, end - start, clocks)


class BackToBack:
    """Chunks of launches queued at most IN_FLIGHT ahead of the GPU, and the GPU
    time they took. `chunk(stream)` queues `per_chunk` launches."""

    def __init__(self, chunk: Callable[[int], None], stream: int, per_chunk: int):
        self.chunk, self.stream, self.per_chunk = chunk, stream, per_chunk
        self.pending: deque = deque()
        self.launches = 0
        self.start = driver.create_event()
        driver.record_event(self.start, stream)

    def keep_busy(self) -> None:
        if len(self.pending) >= IN_FLIGHT:
            done = self.pending.popleft()
            driver.event_synchronize(done, context="energy window")
            driver.destroy_event(done)
        self.chunk(self.stream)
        self.launches += self.per_chunk
        event = driver.create_event()
        driver.record_event(event, self.stream)
        self.pending.append(event)

    def launch_seconds(self) -> float:
        """Synchronise; one launch's GPU time (the first event to the last)."""
        end = driver.create_event()
        driver.record_event(end, self.stream)
        driver.stream_synchronize(self.stream, context="energy window")
        seconds = driver.elapsed_ms(self.start, end) / 1000.0 / max(self.launches, 1)
        for event in (self.start, end, *self.pending):
            driver.destroy_event(event)
        self.pending.clear()
        return seconds


def chunk_of(launch: Callable[[int], None], stream: int,
             launches: int) -> tuple[Callable[[int], None], Callable[[], None], bool]:
    """(queue one chunk, release it, whether it is a CUDA graph). A graph replays
    the chunk without the host, so a kernel shorter than its launch still runs
    back to back; a kernel the driver will not capture is launched directly."""
    from .timers.graph import CapturedLaunches
    try:
        captured = CapturedLaunches(launch, stream, launches)
    except CudaError:
        def direct(s: int) -> None:
            for _ in range(launches):
                launch(s)
        return direct, lambda: None, False
    return captured.replay, captured.close, True


def measure_energy(launch: Callable[[int], None], stream: int,
                   device: driver.Device) -> Energy:
    from .timing import estimate_ms
    handle = nvml.device(driver.device_uuid(device.handle))
    estimate = estimate_ms(launch, stream)
    per_chunk = max(1, min(MAX_GRAPH_LAUNCHES,
                           math.ceil(CHUNK_S * 1000 / estimate) if estimate > 0 else 1))
    chunk, release, graph = chunk_of(launch, stream, per_chunk)
    try:
        busy = BackToBack(chunk, stream, per_chunk)
        warm_until = time.perf_counter() + WARM_S
        while time.perf_counter() < warm_until:
            busy.keep_busy()
        window = edge_window(lambda: nvml.energy_mj(handle), time.perf_counter,
                             busy.keep_busy, lambda: nvml.sm_clock_mhz(handle), WINDOW_S)
        seconds = busy.launch_seconds()
    finally:
        release()
    return Energy(window.watts * seconds, window.watts,
                  statistics.fmean(window.clocks_mhz) if window.clocks_mhz else None,
                  window.seconds, seconds * 1e6, graph)
