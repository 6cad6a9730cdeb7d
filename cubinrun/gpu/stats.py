"""Timing statistics over a run's samples, in microseconds.

`std` is the sample standard deviation (n - 1 in the denominator: the samples
stand for a larger population of launches), 0 for a single sample. p10 / p90
are deciles by linear interpolation between the sorted samples (the
"inclusive" method), so they always lie within [min, max].
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Summary:
    median: float
    min: float
    max: float
    mean: float
    std: float
    p10: float
    p90: float
    samples: int

    @classmethod
    def from_samples(cls, samples_us: Sequence[float]) -> "Summary":
        values = [float(v) for v in samples_us]
        if not values:
            raise ValueError("no timing samples")
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise ValueError("timing samples must be finite and non-negative")
        if len(values) == 1:
            p10 = p90 = values[0]
        else:
            deciles = statistics.quantiles(values, n=10, method="inclusive")
            p10, p90 = deciles[0], deciles[-1]
        return cls(
            median=statistics.median(values), min=min(values), max=max(values),
            mean=statistics.fmean(values),
            std=statistics.stdev(values) if len(values) > 1 else 0.0,
            p10=p10, p90=p90, samples=len(values))

    def to_json(self) -> dict[str, float | int]:
        return {"median_us": self.median, "min_us": self.min, "max_us": self.max,
                "mean_us": self.mean, "std_us": self.std, "p10_us": self.p10,
                "p90_us": self.p90, "samples": self.samples}
