"""One run's records from its N processes (`launch --processes N`), pooled
into one record whose timing says what each process measured.

The pooled `median_us` is the median of the process medians, so one
process that ran slow as a whole moves it little; min, max, mean, std and
the deciles are over every sample. The timing also carries `processes`,
`process_medians_us`, `process_offsets_us` (each process's own event offset,
subtracted from its own samples) and `process_spread`, (max - min) / median
of the process medians, which `compare` judges against (results/
process_noise.py), and `too_noisy`: whether a change of compare's default
threshold can be judged against them. The checks, outputs and debug reports are the first
process's: it is the one that checked.
"""
from __future__ import annotations

import statistics

from ..errors import EXIT_OK
from ..gpu.stats import Summary
from ..gpu.timers.noise import median_noise
from ..pipeline.result import clock_summary
from ..results.compare import DEFAULT_THRESHOLD
from ..results.process_noise import spread, too_noisy
from .outcome import RunRecord

# Rates in a result's throughput, which scale as 1 / the median.
_RATES = ("gbps", "tflops", "bandwidth_fraction", "fp32_fraction")


def pooled(records: list[RunRecord], keep_samples: bool) -> RunRecord:
    """The records of one task from its processes, in the order they ran, as
    one. A process that failed makes the run's record that failure."""
    for number, record in enumerate(records, 1):
        if record.exit_code != EXIT_OK or not record.result or not record.result.get("timing"):
            if number > 1 and record.error:
                record.error = f"in process {number} of {len(records)}: {record.error}"
            record.wall_s = sum(r.wall_s for r in records)
            return record
    first = records[0]
    result = dict(first.result)
    result["timing"] = pooled_timing([r.result["timing"] for r in records], keep_samples)
    result["throughput"] = _rescaled(first.result.get("throughput") or {},
                                     first.result["timing"]["median_us"],
                                     result["timing"]["median_us"])
    first.result = result
    first.wall_s = sum(r.wall_s for r in records)
    return first


def pooled_timing(timings: list[dict], keep_samples: bool) -> dict:
    """The timing object of N processes' timings (each with samples_us)."""
    samples = [s for t in timings for s in t["samples_us"]]
    clocks = [c for t in timings for c in t.get("sm_clocks_mhz") or ()]
    medians = [t["median_us"] for t in timings]
    offsets = [t.get("event_offset_us") for t in timings]
    timing = {**timings[0], **Summary.from_samples(samples).to_json(), **clock_summary(clocks)}
    timing.update({
        "median_us": statistics.median(medians),
        "processes": len(timings),
        "process_medians_us": medians,
        "process_offsets_us": offsets,
        "process_spread": spread(medians),
        "event_offset_us": statistics.median(offsets) if None not in offsets else None,
        "dropped_samples": sum(t.get("dropped_samples") or 0 for t in timings),
        "throttled_samples": sum(t.get("throttled_samples") or 0 for t in timings),
        "noise": median_noise(samples),
        "stopped": "noise" if all(t.get("stopped") == "noise" for t in timings) else "budget",
        "elapsed_s": sum(t.get("elapsed_s") or 0.0 for t in timings),
    })
    timing["too_noisy"] = too_noisy(timing, DEFAULT_THRESHOLD)
    if keep_samples:
        timing["samples_us"], timing["sm_clocks_mhz"] = samples, clocks
    else:
        timing.pop("samples_us", None)
        timing.pop("sm_clocks_mhz", None)
    return timing


def _rescaled(throughput: dict, measured_us: float, pooled_us: float) -> dict:
    if not measured_us or not pooled_us:
        return dict(throughput)
    factor = measured_us / pooled_us
    return {key: (value * factor if key in _RATES and value is not None else value)
            for key, value in throughput.items()}
