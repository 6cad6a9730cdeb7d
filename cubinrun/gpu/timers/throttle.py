"""Samples taken while the GPU throttled are dropped and counted.

nvbench's rule: a sample whose SM clock is below 75% of a reference is not
the kernel's speed but the GPU's state. nvbench's reference is the device's
default clock; here it is the highest clock measured during the run (the
probe after each sample, timing.py), so a GPU whose boost clock is below its
nominal one does not lose every sample. A sample without a clock (no probe
record) is kept.
"""
from __future__ import annotations

from typing import Sequence

from ..timing import THROTTLE_FRACTION, at_full_clock


def drop_throttled(samples: Sequence[float], clocks: Sequence[float | None],
                   fraction: float = THROTTLE_FRACTION
                   ) -> tuple[list[float], list[float | None], int]:
    """(kept samples, their clocks, how many were dropped)."""
    if len(samples) != len(clocks):
        raise ValueError("one clock per sample")
    kept = [(s, c) for s, c, keep in zip(samples, clocks, at_full_clock(clocks, fraction))
            if keep]
    return [s for s, _ in kept], [c for _, c in kept], len(samples) - len(kept)
