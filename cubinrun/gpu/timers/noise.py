"""When to stop sampling: `--max-noise`, the median's relative noise.

The noise of a run is the relative standard error of its median:

    noise = 1.2533 x sigma / sqrt(n) / median,   sigma = 1.4826 x MAD

1.2533 (sqrt(pi / 2)) is the median's standard error over the mean's for
normal samples (compare.py uses the same factor), and sigma is estimated from
the median absolute deviation, scaled to a normal standard deviation, rather
than from the standard deviation: timing samples have a long right tail
(an interrupted launch, a preempted SM), and one outlier should not keep a
stable median sampling. This is nvbench's `stdrel` idea (stop when the
relative standard deviation is below 0.5%) applied to what cubinrun reports,
the median, instead of to the samples' mean.
"""
from __future__ import annotations

import math
import statistics
from typing import Sequence

MEDIAN_SE = 1.2533          # sqrt(pi / 2)
MAD_TO_SIGMA = 1.4826       # 1 / Phi^-1(3/4): a normal sample's MAD x this = its sigma


def median_noise(samples: Sequence[float]) -> float:
    """The median's relative standard error (inf with fewer than 2 samples or a
    median of 0)."""
    if len(samples) < 2:
        return math.inf
    median = statistics.median(samples)
    if median <= 0:
        return math.inf
    mad = statistics.median(abs(s - median) for s in samples)
    return MEDIAN_SE * MAD_TO_SIGMA * mad / math.sqrt(len(samples)) / median


def enough(samples: Sequence[float], max_noise: float, min_samples: int) -> bool:
    """Stop sampling: at least `min_samples` and the noise at most `max_noise`."""
    return len(samples) >= min_samples and median_noise(samples) <= max_noise
