"""From what a timer measured to the run's samples: throttled samples out,
the event offset subtracted, per launch."""
from __future__ import annotations

from ..timing import Timed, corrected, timed_something
from .throttle import drop_throttled


def finish(values_us: list[float], clocks_mhz: list[float | None], offset_us: float | None,
           timer: str, stopped: str, launches: int = 1) -> Timed:
    """`values_us`: one measurement per sample (an event pair, a CUPTI duration),
    covering `launches` launches; `offset_us`: what each measurement adds (None:
    nothing subtracted)."""
    values, clocks, throttled = drop_throttled(values_us, clocks_mhz)
    offset = offset_us or 0.0
    samples, dropped = corrected(values, offset)
    clocks = [c for c, keep in zip(clocks, timed_something(values, offset)) if keep]
    return Timed([s / launches for s in samples], offset_us,
                 clocks, dropped, throttled, timer, stopped,
                 launches)
