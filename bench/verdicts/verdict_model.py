"""How often `compare` gives identical code a verdict, and finds a real
slowdown, on results whose medians move between processes as they were
measured to on the H200 (CPU; nothing is launched).

Each process's median is the kernel's time m, times (1 + N(0, REL)), plus
N(0, ABS) us, plus, in one process of OUTLIER_EVERY, a whole-process shift of
U(0.1, 0.5) us (bench/verdicts/results/verdicts_*: vector add 2^16 medians 5.466-5.637
us over 8 processes, conv1d 2.75 us with one process at 3.21). Each side of
a pair is N such processes pooled as `launch --processes N` pools them; N = 1
is a result file as written before --processes. Prints, per N and kernel
size, the share of identical pairs given SLOWER or FASTER, of pairs that
exit 5, and of +5% / +15% slowdowns found SLOWER.

    PYTHONPATH=. python3 bench/verdicts/verdict_model.py [--pairs 400]
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np

from cubinrun.results.compare import compare_pair

REL, ABS, OUTLIER_EVERY = 0.0005, 0.06, 8
KERNELS_US = (1.3, 3.0, 5.5, 55.0, 87.0, 1600.0)
SAMPLES = 200                    # per process, around its median (0.3% spread)


def process_medians(rng, m: float, n: int) -> list[float]:
    shifts = rng.normal(0, REL, n) * m + rng.normal(0, ABS, n)
    shifts += (rng.random(n) < 1 / OUTLIER_EVERY) * rng.uniform(0.1, 0.5, n)
    return list(m + shifts)


def side(rng, m: float, n: int) -> dict:
    medians = process_medians(rng, m, n)
    samples = [float(s) for med in medians for s in rng.normal(med, 0.003 * med, SAMPLES)]
    timing = {"median_us": statistics.median(medians) if n > 1 else medians[0],
              "std_us": float(np.std(samples)), "samples": len(samples), "samples_us": samples}
    if n > 1:
        timing.update(processes=n, process_medians_us=medians)
    return {"timing": timing}


def rates(rng, m: float, n: int, pairs: int, slowdown: float) -> dict[str, float]:
    wrong = slower = 0
    for _ in range(pairs):
        verdict = compare_pair(side(rng, m, n), side(rng, m, n)).verdict
        wrong += verdict in ("SLOWER", "FASTER")
        base, new = side(rng, m, n), side(rng, m * slowdown, n)
        slower += compare_pair(base, new).verdict == "SLOWER"
    return {"false": wrong / pairs, "found": slower / pairs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--processes", default="1,3,4,5,6")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    print("N  kernel us  false SLOWER/FASTER  +5% found  +15% found")
    for n in map(int, args.processes.split(",")):
        for m in KERNELS_US:
            five = rates(rng, m, n, args.pairs, 1.05)
            fifteen = rates(rng, m, n, args.pairs, 1.15)
            print(f"{n:<2d} {m:9.1f}  {100 * (five['false'] + fifteen['false']) / 2:18.2f}%"
                  f"  {100 * five['found']:8.1f}%  {100 * fifteen['found']:9.1f}%", flush=True)


if __name__ == "__main__":
    main()
