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

The MAD's estimate holds for one mode. A kernel of a few microseconds often
has two (its time lands on one of two values a clock step apart), and then
the median can jump between them while the MAD stays small: on the H200
such kernels stopped with medians 2-10% off the full budget's. So a stop
the MAD allows is confirmed by a bootstrap of the median (the spread of the
medians of resamples, which sees the jumps); when the bootstrap refuses,
it is asked again only once the samples have grown by half, so a bimodal
kernel costs a few bootstraps, not one per batch.
"""
from __future__ import annotations

import math
import statistics
from typing import Sequence

MEDIAN_SE = 1.2533          # sqrt(pi / 2)
MAD_TO_SIGMA = 1.4826       # 1 / Phi^-1(3/4): a normal sample's MAD x this = its sigma
RESAMPLES = 200             # the bootstrap's: its SE estimate is then within ~5%
SEED = 20261203             # fixed: a run's stopping point does not depend on chance
GROWTH = 1.5                # after a refusal, the bootstrap waits for 1.5x the samples


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


def bootstrap_noise(samples: Sequence[float]) -> float:
    """The median's relative standard error from RESAMPLES bootstrap resamples
    (inf with fewer than 2 samples or a median of 0)."""
    import numpy as np
    values = np.asarray(samples, dtype=np.float64)
    median = float(np.median(values)) if len(values) else 0.0
    if len(values) < 2 or median <= 0:
        return math.inf
    picks = np.random.default_rng(SEED).integers(0, len(values), (RESAMPLES, len(values)))
    return float(np.std(np.median(values[picks], axis=1), ddof=1)) / median


class Rule:
    """`--max-noise` for one run's sampling: `met(samples)` once there are at least
    `min_samples`, the MAD's noise is at most `max_noise` and the bootstrap's
    agrees."""

    def __init__(self, max_noise: float, min_samples: int):
        self.max_noise, self.min_samples = max_noise, min_samples
        self._bootstrap_from = 0            # samples the next bootstrap waits for

    def met(self, samples: Sequence[float]) -> bool:
        if len(samples) < self.min_samples or median_noise(samples) > self.max_noise:
            return False
        if len(samples) < self._bootstrap_from:
            return False
        if bootstrap_noise(samples) <= self.max_noise:
            return True
        self._bootstrap_from = math.ceil(GROWTH * len(samples))
        return False
