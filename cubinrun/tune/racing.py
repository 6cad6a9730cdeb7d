"""Racing: a configuration that is clearly slower than the best so far after
its first samples stops being sampled.

Timing every configuration to the full budget spends most of a tune's GPU
time on configurations that lose by far (issue 47: 2.56 s of a 6.21 s search
timing, at least 7 samples of each, the slowest 16 ms a sample). After
`min_samples` samples, a configuration whose median is clearly above the
best's is decided: more samples would only refine by how much it loses.

"Clearly" is the noise model of `compare` (results/compare.py) for two runs
given as summaries: each median's 95% interval from its normal approximation
(median +- 1.96 x 1.2533 x std / sqrt(n)); the difference is significant
when the two intervals do not overlap, and the verdict is compare's `decide`
with its threshold (3%): SLOWER only when significant and the ratio of the
medians is above 1 + threshold. Anything else (SAME, AMBIGUOUS, FASTER) keeps
sampling. Both sides are samples of one worker process, so compare's
allowance for a shift between processes does not apply; a drift of the GPU's
clock within the tune is what the threshold covers, and the final re-timing
of the top K (retime.py) ranks the winners on their full samples anyway.

Racing changes how long a configuration is timed, never whether it passed:
a raced configuration has run and passed its check like any other (a wrong
result fails before its timing counts), and its value is the median of the
samples it got. Only `ok` evaluations compete, raced or not.

`race_rule(best)` has the shape of the sampler's `enough(samples)` hook
(gpu/timing.py), so the timing loop can stop on it as it stops on
--max-noise; the samples it is given are the event pairs less the event
offset (timing.corrected).
"""
from __future__ import annotations

import math
import statistics
from typing import Callable, Sequence

from ..results.compare import DEFAULT_THRESHOLD, MEDIAN_SE, MIN_SAMPLES, Z95, decide


def median_interval(samples: Sequence[float]) -> tuple[float, float, float]:
    """(low, median, high): the median's 95% interval, as compare's summaries give it."""
    median = statistics.median(samples)
    spread = statistics.stdev(samples) if len(samples) > 1 else 0.0
    half = Z95 * MEDIAN_SE * spread / math.sqrt(len(samples))
    return median - half, median, median + half


def verdict(samples: Sequence[float], best: Sequence[float],
            threshold: float = DEFAULT_THRESHOLD) -> str:
    """compare's verdict of `samples` against the best's (SLOWER, FASTER, SAME or
    AMBIGUOUS), from the two medians' intervals."""
    b_low, b_median, b_high = median_interval(best)
    n_low, n_median, n_high = median_interval(samples)
    if b_median <= 0 or b_low <= 0:
        return "AMBIGUOUS"                  # nothing measured to be slower than
    significant = n_low > b_high or n_high < b_low
    return decide(n_median / b_median, n_low / b_high, n_high / b_low, significant, threshold)


def clearly_slower(samples: Sequence[float], best: Sequence[float] | None,
                   threshold: float = DEFAULT_THRESHOLD, min_samples: int = MIN_SAMPLES) -> bool:
    """Whether a configuration timed `samples` so far can stop: both it and the
    best so far have at least `min_samples` samples (compare tests nothing on
    fewer) and it is SLOWER than the best."""
    if best is None or len(samples) < min_samples or len(best) < min_samples:
        return False
    return verdict(samples, best, threshold) == "SLOWER"


def race_rule(best: Sequence[float] | None, threshold: float = DEFAULT_THRESHOLD,
              min_samples: int = MIN_SAMPLES) -> Callable[[list[float]], bool] | None:
    """The timing loop's `enough(samples)` for a configuration raced against
    `best` (the best so far's samples); None when there is no best yet, so the
    first configuration is timed in full."""
    if not best or len(best) < min_samples:
        return None
    kept = list(best)
    return lambda samples: clearly_slower(samples, kept, threshold, min_samples)
