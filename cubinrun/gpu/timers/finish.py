"""From what a timer measured to the run's samples: throttled samples out,
the event offset subtracted, per launch."""
from __future__ import annotations

from ..timing import Pairs, Timed, corrected, timed_something
from .throttle import drop_throttled


def finish(got: Pairs, offset_us: float | None, timer: str, launches: int = 1,
           values_us: list[float] | None = None, startup_us: float | None = None) -> Timed:
    """`got`: what the sampler measured; `values_us`: one measurement per sample
    in its place (CUPTI's durations; default the event pairs), each covering
    `launches` launches; `offset_us`: what each measurement adds (None: nothing
    subtracted); `startup_us`: what the graph timer adds to each launch."""
    stopped = "noise" if got.stopped_early else "budget"
    values_us = got.pairs_us if values_us is None else values_us
    values, clocks, throttled = drop_throttled(values_us, got.clocks_mhz)
    samples, dropped = per_launch_us(values, offset_us, launches, startup_us)
    clocks = [c for c, keep in zip(clocks, timed_something(values, offset_us or 0.0)) if keep]
    return Timed(samples, offset_us, clocks, dropped, throttled, timer, stopped,
                 launches, startup_us)


def per_launch_us(values_us: list[float], offset_us: float | None, launches: int = 1,
                  startup_us: float | None = None) -> tuple[list[float], int]:
    """Each measurement as one launch's time (finish's, and what a timer's
    --max-noise rule judges): less the offset (timing.corrected drops one no
    longer than it), over its launches, plus the graph timer's start-up; and
    how many were dropped."""
    samples, dropped = corrected(values_us, offset_us or 0.0)
    return [s / launches + (startup_us or 0.0) for s in samples], dropped
