"""A point's noise: the relative standard error of the median a result
reports, from what it recorded. Fresh processes disagree far more than one
process's samples do (measurement across processes on an H200: 3-16% for
small kernels), so the spread of the processes' medians, where the result
has it, is the noise; else the samples' own spread, which understates it
(the series' spread covers that: history/changes.py)."""
from __future__ import annotations

import math
import statistics
from typing import Sequence

# The expected range of k draws from a standard normal (d2 of quality
# control's range charts): a spread of k values over it estimates sigma.
_RANGE_OF_NORMALS = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847,
                     9: 2.970, 10: 3.078}
# The standard error of a median is this much a mean's (normal data).
_MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)


def spread_noise(spreads: Sequence[float], processes: int) -> list[float]:
    """The relative standard error of the median of `processes` processes'
    medians, for each relative spread ((max - min) / median) given."""
    d2 = _RANGE_OF_NORMALS.get(processes) or 2 * math.sqrt(2 * math.log(processes))
    scale = _MEDIAN_EFFICIENCY / d2 / math.sqrt(processes)
    return [float(s) * scale for s in spreads]


def point_noise(timing: dict) -> float | None:
    """The relative noise of one result's median (None when it says nothing):
    from `process_medians_us` or `process_spread` over `processes`, else from
    the samples (`samples_us`, else `std_us` over `samples`)."""
    median = timing.get("median_us")
    if not median:
        return None
    processes = timing.get("processes") or 1
    medians = timing.get("process_medians_us")
    if medians and len(medians) >= 2:
        spread = (max(medians) - min(medians)) / statistics.median(medians)
        return spread_noise([spread], len(medians))[0]
    if processes >= 2 and timing.get("process_spread") is not None:
        return spread_noise([timing["process_spread"]], processes)[0]
    samples = timing.get("samples_us")
    if samples is not None and len(samples) >= 2:
        return _MEDIAN_EFFICIENCY * statistics.stdev(samples) / math.sqrt(len(samples)) / median
    if timing.get("std_us") is not None and (timing.get("samples") or 0) >= 2:
        return _MEDIAN_EFFICIENCY * timing["std_us"] / math.sqrt(timing["samples"]) / median
    return None
