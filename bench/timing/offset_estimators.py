"""Which estimate of the event offset is the same in every process?

In one fresh process: many calibration pairs (the empty kernel, R = 1, 2, 4,
8, 16 back-to-back launches a pair, R taking turns pair by pair, a clock
probe after each, as timing.event_calibration takes them), then the offset
estimated from the first 256 pairs per R and from all of them, by the median
(today's estimator) and by a trimmed mean; and the raw event-pair median and
mean of one empty launch, cold L2, as a run times it. Run it in several fresh
processes and compare the lines: an estimator that is the same in every
process adds no process-to-process noise.

    PYTHONPATH=. python3 bench/timing/offset_estimators.py [--pairs 2048] [--json FILE]
"""
from __future__ import annotations

import argparse
import itertools
import json
import statistics

from cubinrun.gpu import driver
from cubinrun.gpu.timing import (CALIBRATION_REPEATS, TimingKernels, at_full_clock,
                                 least_squares_slope, sample)


def trimmed_mean(values: list[float], cut: float = 0.1) -> float:
    values = sorted(values)
    k = int(len(values) * cut)
    return statistics.fmean(values[k:len(values) - k])


def line(centres: dict[int, float]) -> float:
    repeats = sorted(centres)
    slope = least_squares_slope(repeats, [centres[r] for r in repeats])
    return centres[repeats[0]] - repeats[0] * slope


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=1900, help="pairs per launch count (5 counts: at most 10000 in all)")
    parser.add_argument("--json")
    args = parser.parse_args()
    device = driver.open_device(0)
    stream, kernels = driver.create_stream(), TimingKernels(device)
    rounds = len(CALIBRATION_REPEATS)
    turns = itertools.cycle(CALIBRATION_REPEATS)

    def empties(s: int) -> None:
        for _ in range(next(turns)):
            kernels.empty(s)
    got = sample(stream, kernels, empties, args.pairs * rounds, per_batch=rounds * 8, clocks=True)
    kept = at_full_clock(got.clocks_mhz)
    per_r = {r: [p for p, k in zip(got.pairs_us[i::rounds], kept[i::rounds]) if k]
             for i, r in enumerate(CALIBRATION_REPEATS)}
    report = {}
    for n in (256, args.pairs):
        report[f"median_{n}"] = line({r: statistics.median(v[:n]) for r, v in per_r.items()})
        report[f"trimmed_{n}"] = line({r: trimmed_mean(v[:n]) for r, v in per_r.items()})
    raw = sample(stream, kernels, kernels.empty, 2000, before=kernels.flush, clocks=True).pairs_us
    report["raw_empty_median"] = statistics.median(raw)
    report["raw_empty_trimmed"] = trimmed_mean(raw)
    print(" ".join(f"{k} {v:.4f}" for k, v in report.items()), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    main()
