"""How many evaluations each `cubinrun tune` strategy needs to come within 1%
(and 2%) of the exhaustive best, replayed on a landscape (no GPU), over 20
seeds: the median and the 90th percentile.

    python bench/tune_strategies.py                      # the synthetic reduction landscape
    python bench/tune_strategies.py SPEC RESULTS.jsonl   # a measured one (launch --jsonl)

The synthetic landscape (tests/tunelandscape.py) is shaped like Kernel Tuner's
reduction example over its own 792 points on the H200, where random search
needs a median of 124 evaluations (p90 344) to come within 1%. Storage is
in memory here: the search is what is measured, not the database.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def evaluations_to(found: list[float], best: float, tolerance: float, minimize=True) -> int | None:
    """The 1-based number of the first evaluation within `tolerance` of `best`."""
    for number, value in enumerate(found, 1):
        if value is not None and (value <= best * (1 + tolerance) if minimize
                                  else value >= best * (1 - tolerance)):
            return number
    return None


def run_one(spec: str, replay: str, strategy: str, seed: int, max_evals: int,
            target: float) -> list[float]:
    """The objective of each configuration measured, in order (None: failed),
    until one is at or below `target`."""
    import optuna
    from cubinrun.tune.evaluate import OBJECTIVES, ReplayEvaluator
    from cubinrun.tune.search import Budget, Search
    from cubinrun.tune.space import load_space
    from cubinrun.tune.strategies import make_sampler, require_optuna
    require_optuna()
    objective = OBJECTIVES["time"]
    space = load_space(spec, {})
    evaluator = ReplayEvaluator(replay, objective)
    study = optuna.create_study(direction=objective.direction,
                                sampler=make_sampler(strategy, seed))
    search = Search(space, study, strategy, evaluator, objective, Budget(max_evals),
                    lambda point: "replay", seed,
                    until=lambda e: e.ok and e.value <= target)
    return [e.value if e.ok else None for e in search.run()]


def percentile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?")
    parser.add_argument("results", nargs="?")
    parser.add_argument("--strategies", default="random,tpe,cmaes")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--max-evals", type=int, default=400)
    args = parser.parse_args()
    if args.spec:
        spec, results = args.spec, args.results
    else:
        import tunelandscape
        folder = Path(tempfile.mkdtemp(prefix="tune-bench-"))
        spec, results = map(str, tunelandscape.write(folder, "reduction"))
    from cubinrun.results.reader import read_results
    values = [r["timing"]["median_us"] for r in read_results(results)
              if r.get("exit_code") == 0 and r.get("timing")]
    best = min(values)
    print(f"{spec}: {len(values)} configurations, best {best:.4g} us; "
          f"{sum(v <= best * 1.01 for v in values)} within 1%, "
          f"{sum(v <= best * 1.02 for v in values)} within 2%")
    print(f"{'strategy':10} {'1%: median':>11} {'p90':>6} {'2%: median':>11} {'p90':>6} "
          f"{'missed':>6} {'s/run':>6}")
    for strategy in args.strategies.split(","):
        needed = {0.01: [], 0.02: []}
        missed, started = 0, time.perf_counter()
        for seed in range(args.seeds):
            found = run_one(spec, results, strategy, seed, args.max_evals, best * 1.01)
            for tolerance in needed:
                n = evaluations_to(found, best, tolerance)
                # not reached within the budget: counted as the budget (a lower bound)
                needed[tolerance].append(n if n is not None else args.max_evals)
                missed += n is None and tolerance == 0.01
        seconds = (time.perf_counter() - started) / args.seeds
        one, two = needed[0.01], needed[0.02]
        print(f"{strategy:10} {statistics.median(one):>11.1f} {percentile(one, 0.9):>6.0f} "
              f"{statistics.median(two):>11.1f} {percentile(two, 0.9):>6.0f} {missed:>6} "
              f"{seconds:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
