"""The events timer (the default): an event pair around each launch, queued
behind a spin so the host's launch latency is not timed, the pair's own
offset subtracted (timing.py explains each step)."""
from __future__ import annotations

from typing import Callable

from ..timing import (Timed, TimingKernels, TimingOptions, batch_size, offset_us, sample,
                      sample_cost_ms, sample_count, warm_up)
from . import noise
from .finish import finish, per_launch_us


def measure(launch: Callable[[int], None], stream: int, kernels: TimingKernels,
            options: TimingOptions,
            progress: Callable[[int, int], None] | None = None) -> Timed:
    estimate = warm_up(launch, stream, options)
    offset = offset_us(stream, kernels, options)
    flush = kernels.flush if options.l2 == "cold" else None
    per_sample = sample_cost_ms(launch, stream, kernels, flush, estimate)
    count = sample_count(options.rep_ms, per_sample, options.min_samples)
    enough = None
    if options.max_noise is not None:
        rule = noise.Rule(options.max_noise, options.min_samples)

        def enough(pairs: list[float]) -> bool:
            return rule.met(per_launch_us(pairs, offset)[0])
    got = sample(stream, kernels, launch, count, batch_size(count, options), before=flush,
                 progress=progress, clocks=True, enough=enough)
    return finish(got, offset, "events")
