"""Change points in one series: the commits where a kernel's time moved and
stayed moved.

The method was chosen by measurement (bench/history/history_detection.py, its table in
docs/history.md): PELT with the l2 cost (the optimal segmentation under a
penalty per change, ruptures' C implementation through `KernelCPD` with the
linear kernel, so 1000 commits take milliseconds), on the logarithm of the
times scaled by the series' own noise. That noise is the robust spread of
consecutive differences: a GPU kernel's median moves 3-16% between processes
for small kernels and 0.2-0.6% for long ones, far more than one run's own
samples say, so only the series shows it. Each point's recorded noise (the
spread of its processes' medians, else its samples') can only widen that.

Before PELT each point is pulled to within CLIP noise units of its
neighbours' median, so that one process that ran slow as a whole (it
happens), or a few close together, are not change points. Each change PELT
proposes is then kept only if the levels either side differ by Z_MIN
standard errors, computed from the points' noise or a side's own spread,
whichever is larger.

A run's process adds one shift to every kernel it times; history/
process_shift.py takes it off, from the commit's other series, before this.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

# The penalty per change point in units of the noise's variance, chosen with
# bench/history/history_detection.py for at most 1 false change point in 1000 commits.
PENALTY = 22.0
# How far (in noise units) a point may sit from its neighbours' median before
# PELT sees it, and how many neighbours (itself included): 9 pulls in up to 4
# slow processes close together (a layer norm's or conv1d's, on the H200),
# where 5 let 3 of them make a short level (bench/history/history_stored_noise.py:
# 0.12-0.23 false change points per 1000 commit-series against 0.58-0.66).
CLIP = 3.0
WINDOW = 9
# The smallest difference between two levels, in standard errors, kept as a change.
Z_MIN = 5.0
# Below this relative noise a series is as steady as its timer: 0.05%.
NOISE_FLOOR = 5e-4


@dataclass(frozen=True)
class Change:
    """A change point: the level moved from `before` to `after` (medians, µs)
    at point `index` (the first point of the new level)."""

    index: int
    before: float
    after: float
    z: float

    @property
    def ratio(self) -> float:
        return self.after / self.before


def series_noise(log_values: np.ndarray) -> float:
    """The relative noise of one point, from the median absolute deviation of
    consecutive differences (a step moves one difference, not the median)."""
    if len(log_values) < 3:
        return NOISE_FLOOR
    differences = np.diff(log_values)
    mad = np.median(np.abs(differences - np.median(differences)))
    return max(1.4826 * mad / math.sqrt(2), NOISE_FLOOR)


def find_changes(values: Sequence[float], noise: Sequence[float | None] | None = None, *,
                 penalty: float = PENALTY, z_min: float = Z_MIN) -> list[Change]:
    """The change points of a series of times (µs, > 0, in commit order);
    `noise` is each point's recorded relative noise, or None."""
    y = np.log(np.asarray(values, dtype=float))
    n = len(y)
    if n < 2:
        return []
    sigma = series_noise(y)
    recorded = np.array([v if v is not None else 0.0 for v in (noise or [None] * n)], float)
    point_sigma = np.maximum(recorded, sigma)
    z = _clipped(y, point_sigma) / sigma
    import ruptures
    ends = ruptures.KernelCPD(kernel="linear", min_size=1, jump=1).fit(
        z.reshape(-1, 1)).predict(pen=penalty)
    return _significant(y, point_sigma, [0, *ends], z_min)


def _clipped(y: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Each point pulled to within CLIP noise units of the median of the
    WINDOW points around it. Before the first point the window mirrors the
    series (a slow first process is pulled in too); after the newest it
    repeats the newest, which is so never pulled in: a change at the newest
    commit must show."""
    half = WINDOW // 2
    if len(y) < WINDOW:
        return y
    padded = np.concatenate([y[half:0:-1], y, y[-1:].repeat(half)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, WINDOW)
    centre = np.median(windows, axis=1)
    return np.clip(y, centre - CLIP * sigma, centre + CLIP * sigma)


def _significant(y: np.ndarray, sigma: np.ndarray, bounds: list[int],
                 z_min: float) -> list[Change]:
    """The proposed boundaries whose two sides differ by z_min standard errors,
    the weakest dropped first (dropping one merges its two segments, which
    changes its neighbours' sides)."""
    bounds = list(bounds)
    while len(bounds) > 2:
        scores = [_score(y, sigma, bounds[i - 1], bounds[i], bounds[i + 1])
                  for i in range(1, len(bounds) - 1)]
        weakest = int(np.argmin(scores))
        if scores[weakest] >= z_min:
            break
        del bounds[weakest + 1]
    return [Change(b, float(math.exp(np.median(y[a:b]))), float(math.exp(np.median(y[b:c]))),
                   _score(y, sigma, a, b, c))
            for a, b, c in zip(bounds, bounds[1:], bounds[2:])]


def _score(y: np.ndarray, sigma: np.ndarray, a: int, b: int, c: int) -> float:
    """How many standard errors apart the means of y[a:b] and y[b:c] are,
    each side's error from its points' noise or, from 3 points on, from its
    own spread where that is larger (Welch's test): a few slow processes
    close together make a short side of mixed points, not a new level."""
    def variance_of_mean(start: int, end: int) -> float:
        variance = float(np.mean(sigma[start:end] ** 2))
        if end - start >= 3:
            variance = max(variance, float(np.var(y[start:end], ddof=1)))
        return variance / (end - start)
    error = math.sqrt(variance_of_mean(a, b) + variance_of_mean(b, c))
    return abs(float(np.mean(y[b:c]) - np.mean(y[a:b]))) / error
