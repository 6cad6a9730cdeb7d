"""Which change-point method `cubinrun history check` uses, by measurement on
synthetic histories shaped like H200 noise between fresh processes.

Each commit of a series is one process's median. The noise is that of the
9-run suite measured in 8 fresh processes on an H200 (per-process medians
moved 12-16% for an empty kernel, 6-9% for layer norm, 2-4% for small vector
adds, 0.2-0.6% for kernels of 87 us and more): the per-process sigma below is
that spread over 2.85 (the expected range of 8 normal draws). On top: event
ticks of 32 ns, and now and then (2% of commits) a process that runs slow or
fast as a whole by 3-6 sigma.

Steps are injected at known commits (at least 25 commits apart, both
directions). A step counts as found when a change point lies within 1 commit
of it; a change point more than 3 commits from every step is false. Methods:
- pelt-l2: the one cubinrun uses (cubinrun/history/changes.py);
- pelt-l2-raw: the same without pulling single-process outliers in;
- binseg-l2: ruptures' binary segmentation, same cost and penalty;
- e-divisive: MongoDB's signal-processing-algorithms (E-divisive means with a
  permutation test, p < 0.01), when installed.

    python bench/history/history_detection.py [--series 60] [--commits 200] [--seed 1]
                                      [--processes 1]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cubinrun.history import changes, noise  # noqa: E402

# (name, median us, relative sigma of one process's median)
KERNELS = [
    ("empty0", 3.5, 0.050), ("layer_norm", 9.0, 0.027), ("vadd_2^16", 5.7, 0.0125),
    ("vadd_2^20", 20.0, 0.009), ("softmax", 12.0, 0.018), ("work", 87.0, 0.0019),
    ("conv", 55.0, 0.0021), ("vadd_2^24", 210.0, 0.0012), ("matmul", 1600.0, 0.0007),
]
TICK_US = 0.032


def history(rng, median, sigma, commits, steps, processes=1):
    """One series: per-commit medians with the steps (index, factor) applied,
    each the median of `processes` processes' medians, and its recorded noise
    (the standard error from the processes' spread; None for one process)."""
    level = np.full((commits, 1), median)
    for index, factor in steps:
        level[index:] *= factor
    values = level * np.exp(rng.normal(0, sigma, (commits, processes)))
    odd = rng.random((commits, processes)) < 0.02
    values[odd] *= np.exp(rng.choice([-1, 1], odd.sum()) * rng.uniform(3, 6, odd.sum()) * sigma)
    values = np.maximum(np.round(values / TICK_US) * TICK_US, TICK_US)
    medians = np.median(values, axis=1)
    if processes == 1:
        return medians, None
    spread = (values.max(axis=1) - values.min(axis=1)) / medians
    return medians, noise.spread_noise(spread, processes)


def step_plan(rng, commits, sizes):
    """1-3 steps at least 25 commits apart, away from the ends."""
    count = rng.integers(1, 4)
    while True:
        places = np.sort(rng.choice(np.arange(20, commits - 20), count, replace=False))
        if np.all(np.diff(places) >= 25):
            break
    return [(int(p), float(rng.choice(sizes)) ** rng.choice([-1, 1])) for p in places]


def pelt_raw(values, recorded):
    y = np.log(values)
    sigma = changes.series_noise(y)
    import ruptures
    ends = ruptures.KernelCPD(kernel="linear", min_size=1, jump=1).fit(
        (y / sigma).reshape(-1, 1)).predict(pen=changes.PENALTY)
    found = changes._significant(y, np.full(len(y), sigma), [0, *ends], changes.Z_MIN)
    return [c.index for c in found]


def binseg(values, recorded):
    y = np.log(values)
    sigma = changes.series_noise(y)
    import ruptures
    ends = ruptures.Binseg(model="l2", min_size=1, jump=1).fit(
        (y / sigma).reshape(-1, 1)).predict(pen=changes.PENALTY)
    return [e for e in ends[:-1]]


def e_divisive(values, recorded):
    from signal_processing_algorithms.energy_statistics import energy_statistics
    return sorted(energy_statistics.e_divisive(np.log(values), pvalue=0.01, permutations=100))


METHODS = {"pelt-l2": lambda v, recorded: [c.index for c in changes.find_changes(v, recorded)],
           "pelt-l2-raw": pelt_raw, "binseg-l2": binseg, "e-divisive": e_divisive}


def score(found, steps, tally, long_kernel):
    for index, factor in steps:
        size = abs(math.log(factor))
        bucket = "5%+" if size >= math.log(1.05) - 1e-9 else ("3% long" if long_kernel else None)
        if bucket:
            tally[bucket][1] += 1
            tally[bucket][0] += any(abs(f - index) <= 1 for f in found)
    tally["false"] += sum(all(abs(f - i) > 3 for i, _ in steps) for f in found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=60, help="histories per kernel")
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--processes", type=int, default=1,
                        help="fresh processes behind each commit's point")
    args = parser.parse_args()
    rows = []
    for method, detect in METHODS.items():
        if method == "e-divisive":
            try:
                import signal_processing_algorithms  # noqa: F401
            except ImportError:
                print("e-divisive: signal-processing-algorithms is not installed", file=sys.stderr)
                continue
        rng = np.random.default_rng(args.seed)      # the same histories for every method
        tally = {"5%+": [0, 0], "3% long": [0, 0], "false": 0, "null false": 0}
        seconds = 0.0
        for name, median, sigma in KERNELS:
            long_kernel = median >= 50
            sizes = [1.03, 1.05, 1.10, 1.20] if long_kernel else [1.05, 1.10, 1.20]
            for _ in range(args.series):
                steps = step_plan(rng, args.commits, sizes)
                stepped = history(rng, median, sigma, args.commits, steps, args.processes)
                steady = history(rng, median, sigma, args.commits, [], args.processes)
                start = time.perf_counter()
                found = detect(*stepped)
                tally["null false"] += len(detect(*steady))
                seconds += time.perf_counter() - start
                score(found, steps, tally, long_kernel)
        commits = len(KERNELS) * args.series * args.commits
        rows.append((method, tally, 1000 * (tally["false"] + tally["null false"]) / (2 * commits),
                     1000 * seconds / (2 * len(KERNELS) * args.series)))
    print(f"{len(KERNELS)} kernels x {args.series} histories x {args.commits} commits, "
          f"each with steps and once without, {args.processes} process(es) a commit, "
          f"seed {args.seed}\n")
    print("| method | 5%+ steps within 1 commit | 3% steps, kernels >= 50 us | "
          "false change points per 1000 commits | ms per series |")
    print("| --- | --- | --- | --- | --- |")
    for method, tally, false_rate, ms in rows:
        cells = [f"{100 * hit / total:.1f}% ({hit}/{total})"
                 for hit, total in (tally["5%+"], tally["3% long"])]
        print(f"| {method} | {cells[0]} | {cells[1]} | {false_rate:.2f} | {ms:.1f} |")


if __name__ == "__main__":
    main()
