"""The timers `--timer` picks, behind one interface: `time_kernel(launch,
stream, kernels, options, progress) -> timing.Timed`.

- events (events.py, the default): event pairs, the pair's offset subtracted;
- cupti (cupti.py): the profiler's kernel records, kernel-only durations;
- graph (graph.py): launches replayed from a CUDA graph, time per launch, hot L2.

Each takes one SM clock per sample and drops throttled samples
(throttle.py), and stops early under `--max-noise` (noise.py).
"""
from __future__ import annotations

import importlib
from typing import Callable

from ..timing import Timed, TimingKernels, TimingOptions

TIMERS = ("events", "cupti", "graph")


def time_kernel(launch: Callable[[int], None], stream: int, kernels: TimingKernels,
                options: TimingOptions,
                progress: Callable[[int, int], None] | None = None) -> Timed:
    """Samples of one launch's device time by `options.timer`.

    `launch(stream)` queues one launch of the kernel on `stream`."""
    if options.timer not in TIMERS:
        raise ValueError(f"unknown timer {options.timer!r}")
    timer = importlib.import_module(f".{options.timer}", __name__)
    return timer.measure(launch, stream, kernels, options, progress)
