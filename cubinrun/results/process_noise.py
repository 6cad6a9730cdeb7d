"""What two processes on one machine differ by, and how `compare` judges
results that carry it.

A kernel's median moves from one fresh process to the next by more than its
samples vary inside one: each process gets its own context, allocations and
event offset, and now and then a whole process runs a few tenths of a
microsecond slow (H200, 8 fresh processes: 0.16-0.47 us between the extreme
processes of kernels of 1-6 us, 0.1-0.4% for kernels of 50 us to 1.6 ms;
bench/verdicts/verdicts.py). A test that treats two processes' samples as draws from
one distribution calls that shift a regression. So:

- Results with process medians on both sides (`launch --processes N`) are
  judged between processes: the ratio of the medians of the process medians,
  its interval a bootstrap over the processes (each side's processes drawn
  again with replacement), widened to at least the machine's floor, which N
  processes cannot see below (SHIFT_FLOOR_*).
- A side with one process (every result file written before `--processes`):
  its process shift is unknown, so the interval is widened by what two
  processes were measured to differ by (ONE_PROCESS_*); a difference within
  that is never SLOWER or FASTER, and the reason says how to get a verdict.
"""
from __future__ import annotations

from typing import Sequence

# One process a side: a difference up to ONE_PROCESS_US + ONE_PROCESS_FRACTION x
# the median is what two fresh processes on one H200 differed by (the largest
# pair over 9 kernels and 8 processes: 0.47 us at 2.7 us, 0.22 us at 56 us,
# 1.9 us at 1.6 ms), with room for a noisier machine.
ONE_PROCESS_US = 0.6
ONE_PROCESS_FRACTION = 0.005
# Several processes a side: the least the interval of the ratio is widened by
# (a few processes can agree by chance). Chosen on bench/verdicts/verdict_model.py's
# model of the H200's processes: with 0.1 us, 4 processes a side gave 1.3-3 us
# kernels 2-4% wrong verdicts; with 0.3 us none in 1600 pairs, while +15% of a
# 5.5 us kernel and +5% of a 55 us one were all still found.
SHIFT_FLOOR_US = 0.3
SHIFT_FLOOR_FRACTION = 0.001
# What `compare` tells a one-process result to gather instead.
RECOMMENDED_PROCESSES = 3
MIN_PROCESSES = 3            # fewer a side: judged as one process
BOOTSTRAP_RESAMPLES = 4000
CONFIDENCE = 0.95


def process_medians(timing: dict) -> list[float] | None:
    """The medians of the processes a result's samples came from, when there
    are enough of them to judge between processes; else None."""
    medians = timing.get("process_medians_us")
    if isinstance(medians, (list, tuple)) and len(medians) >= MIN_PROCESSES \
            and all(m is not None and m > 0 for m in medians):
        return [float(m) for m in medians]
    return None


def one_process_allowance_us(median_us: float) -> float:
    """What a one-process result may differ from another process's by, in us."""
    return ONE_PROCESS_US + ONE_PROCESS_FRACTION * median_us


def shift_floor_us(median_us: float) -> float:
    return SHIFT_FLOOR_US + SHIFT_FLOOR_FRACTION * median_us


def widened(ratio: float, low: float | None, high: float | None,
            allowance: float) -> tuple[float, float]:
    """The interval [low, high] of a ratio, made at least ratio -/+ allowance
    (a fraction of the baseline's median)."""
    low = ratio - allowance if low is None else min(low, ratio - allowance)
    high = ratio + allowance if high is None else max(high, ratio + allowance)
    return max(0.0, low), high


def between_processes(base: Sequence[float], new: Sequence[float]
                      ) -> tuple[float, float, float, float]:
    """(ratio, low, high, p) for two sides' process medians: the ratio of the
    medians of the process medians, its percentile interval from a bootstrap
    over processes (seeded: the same files give the same verdict), and the
    bootstrap's two-sided p for a ratio of 1."""
    import numpy as np
    rng = np.random.default_rng(0)
    b, n = np.asarray(base, dtype=np.float64), np.asarray(new, dtype=np.float64)
    ratio = float(np.median(n) / np.median(b))
    drawn_b = np.median(b[rng.integers(0, len(b), (BOOTSTRAP_RESAMPLES, len(b)))], axis=1)
    drawn_n = np.median(n[rng.integers(0, len(n), (BOOTSTRAP_RESAMPLES, len(n)))], axis=1)
    ratios = drawn_n / drawn_b
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    p = min(1.0, 2 * min(float(np.mean(ratios <= 1)), float(np.mean(ratios >= 1))))
    return ratio, float(low), float(high), p


def spread(medians: Sequence[float]) -> float | None:
    """(max - min) / median of the process medians: the share by which the
    processes disagree."""
    import statistics
    if len(medians) < 2:
        return None
    middle = statistics.median(medians)
    return (max(medians) - min(medians)) / middle if middle > 0 else None


def too_noisy(timing: dict, threshold: float) -> bool | None:
    """Whether a result gathered in several processes is too noisy to judge a
    change of `threshold` against: its processes' medians spread over more than
    twice the threshold, or the machine's floor alone is beyond it. None for
    one process (nothing measured between processes)."""
    medians = timing.get("process_medians_us") or []
    middle = timing.get("median_us")
    if len(medians) < 2 or not middle:
        return None
    between = spread(medians) or 0.0
    return between / 2 > threshold or shift_floor_us(middle) / middle > threshold
