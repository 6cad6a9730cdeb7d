"""The shift a whole process adds to every kernel it times, taken off a
commit's points before change points are looked for.

Measured on an H200 (32 fresh processes of a 9-kernel suite, the files
bench/verdicts/results/verdicts_h200_*.json; bench/history/history_stored_noise.py): a
process's medians sit above or below the other processes' by one amount in
µs for every kernel it times (0.059 µs SD between processes), while what is
each kernel's own differs by about 0.02 µs. For a 1.3 µs kernel the shared
part is 4.5% and its own 1.6%, so a 5% step is 1 sigma of the raw series and
3 of the corrected one.

A commit's runs come from one CI job, so the other series of the same
commit and device show that job's shift: each series' residual from its own
level (the segments between its change points) is weighed by how steady the
series is (a 1.6 ms kernel's own noise is larger than the shift), and the
weighted median of the other series' residuals at a commit is the shift
taken off. A series never takes part in its own correction, and it keeps the
correction only when that makes its noise (changes.series_noise) at least
KEEP_BELOW smaller: runs of separate processes share no shift and are left
as they were measured.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .changes import find_changes, series_noise

# A correction is kept when the series' noise falls below this share of its own.
KEEP_BELOW = 0.85
# The fewest other series at a commit that can say what its process added.
MIN_OTHERS = 2


def corrected(series: Sequence[dict[str, float]]) -> list[dict[str, float] | None]:
    """For each series (its medians in µs by commit, in commit order, all of
    one device), its medians less each commit's process shift, or None where
    the correction would not make the series steadier."""
    out: list[dict[str, float] | None] = [None] * len(series)
    # a series with too few times (its runs failed) neither takes nor gives
    rows = [i for i, one in enumerate(series) if len(one) >= 3]
    if len(rows) > MIN_OTHERS:
        for i, fixed in zip(rows, _corrected([series[i] for i in rows])):
            out[i] = fixed
    return out


def _corrected(series: Sequence[dict[str, float]]) -> list[dict[str, float] | None]:
    commits = list(dict.fromkeys(c for one in series for c in one))
    column = {c: i for i, c in enumerate(commits)}
    residuals = np.full((len(series), len(commits)), np.nan)
    for row, one in enumerate(series):
        values = np.fromiter(one.values(), float, len(one))
        residuals[row, [column[c] for c in one]] = values - _level(values)
    weights = _weights(residuals)
    out: list[dict[str, float] | None] = []
    for row, one in enumerate(series):
        shift = _shift_without(residuals, weights, row)
        values = np.fromiter(one.values(), float, len(one))
        taken = values - np.nan_to_num(shift[[column[c] for c in one]])
        if np.all(taken > 0) and \
                series_noise(np.log(taken)) < KEEP_BELOW * series_noise(np.log(values)):
            out.append(dict(zip(one, map(float, taken))))
        else:
            out.append(None)
    return out


def _level(values: np.ndarray) -> np.ndarray:
    """Each point's level: the median of its segment between change points (a
    rolling median would smear a step of one series into every other)."""
    level = np.empty_like(values)
    bounds = [0, *(c.index for c in find_changes(values)), len(values)]
    for start, end in zip(bounds, bounds[1:]):
        level[start:end] = np.median(values[start:end])
    return level


def _weights(residuals: np.ndarray) -> np.ndarray:
    """1 / spread² of each series' residuals (robust: the MAD), the spread no
    smaller than the median series' so that no one series decides alone."""
    centre = np.nanmedian(residuals, axis=1, keepdims=True)
    spread = 1.4826 * np.nanmedian(np.abs(residuals - centre), axis=1)
    spread = np.maximum(spread, max(float(np.median(spread)), 1e-9))
    return 1 / spread ** 2


def _shift_without(residuals: np.ndarray, weights: np.ndarray, left_out: int) -> np.ndarray:
    """Per commit, the weighted median of the other series' residuals (NaN
    where fewer than MIN_OTHERS of them have a point there)."""
    others = np.delete(residuals, left_out, axis=0)
    weight = np.where(np.isnan(others), 0.0, np.delete(weights, left_out)[:, None])
    order = np.argsort(np.where(np.isnan(others), np.inf, others), axis=0)
    ranked = np.take_along_axis(others, order, axis=0)
    cumulative = np.cumsum(np.take_along_axis(weight, order, axis=0), axis=0)
    at = np.argmax(cumulative >= cumulative[-1] / 2, axis=0)
    shift = ranked[at, np.arange(residuals.shape[1])]
    counted = (~np.isnan(others)).sum(axis=0)
    return np.where(counted >= MIN_OTHERS, shift, np.nan)
