"""How many evaluations each `cubinrun tune` strategy needs to come within 1%
(and 2%) of the exhaustive best, replayed on a landscape (no GPU), over 20
seeds: the median and the 90th percentile.

    python bench/tune/tune_strategies.py                      # the synthetic landscapes
    python bench/tune/tune_strategies.py --landscapes waves   # one of them
    python bench/tune/tune_strategies.py SPEC RESULTS.jsonl   # a measured one (launch --jsonl)
    python bench/tune/tune_strategies.py --plot docs/tune_strategies.png

The synthetic landscapes are tests/support/tunelandscape.py's: `reduction` is shaped
like Kernel Tuner's reduction example over its own 792 points on the H200,
where random search needs a median of 124 evaluations (p90 344) to come
within 1%; `waves` is the same space made rugged by partial waves of blocks;
`matmul` a tiled matmul's space with failing configurations and a cliff;
`stride` and `convolution` are described there. The strategies are all but
Optuna's `gp` (it needs PyTorch).
Storage is in memory here: the search is what is measured, not the database.
`--plot` draws the best so far against evaluations (median and the 10-90%
band over seeds), one panel per landscape, one line per strategy.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("cubinrun") is None:      # run from a checkout, not installed
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def run_one(spec: str, replay: str, strategy: str, seed: int, max_evals: int) -> list[float]:
    """The objective of each configuration measured, in order (None: failed)."""
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
                    lambda point: "replay", seed)
    return [e.value if e.ok else None for e in search.run()]


def percentile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def best_so_far(found: list[float | None], best: float) -> list[float]:
    """How far above `best` the best so far is after each evaluation (a fraction)."""
    out, current = [], float("inf")
    for value in found:
        if value is not None:
            current = min(current, value)
        out.append(current / best - 1)
    return out


def compare(name: str, spec: str, results: str, strategies: list[str], seeds: int,
            max_evals: int) -> dict[str, list[list[float]]]:
    """One landscape: a line of the table per strategy; the best-so-far curves."""
    from cubinrun.results.reader import read_results
    from cubinrun.tune.evaluate import OBJECTIVES, evaluations_to
    time_ = OBJECTIVES["time"]
    values = [r["timing"]["median_us"] for r in read_results(results)
              if r.get("exit_code") == 0 and r.get("timing")]
    best = min(values)
    print(f"\n{name}: {len(values)} configurations run, best {best:.4g} us; "
          f"{sum(v <= best * 1.01 for v in values)} within 1%, "
          f"{sum(v <= best * 1.02 for v in values)} within 2%")
    print(f"| strategy | within 1% in {max_evals}: seeds | to 1%: median | p90 | "
          f"to 2%: median | p90 | s/run |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    curves = {}
    for strategy in strategies:
        needed = {0.01: [], 0.02: []}
        curves[strategy], started = [], time.perf_counter()
        for seed in range(seeds):
            found = run_one(spec, results, strategy, seed, max_evals)
            curves[strategy].append(best_so_far(found, best))
            for tolerance in needed:
                needed[tolerance].append(evaluations_to(found, best, time_, tolerance))
        seconds = (time.perf_counter() - started) / seeds
        hits = sum(n is not None for n in needed[0.01])
        # not reached within the budget: counted as one past it (a lower bound)
        one, two = ([n or max_evals + 1 for n in needed[t]] for t in (0.01, 0.02))
        print(f"| {strategy} | {hits}/{seeds} | {statistics.median(one):.1f} | "
              f"{percentile(one, 0.9):.0f} | {statistics.median(two):.1f} | "
              f"{percentile(two, 0.9):.0f} | {seconds:.2f} |", flush=True)
    return curves


def plot(path: str, all_curves: dict[str, dict[str, list[list[float]]]]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy
    figure, axes = plt.subplots(1, len(all_curves), figsize=(4 * len(all_curves), 3.2),
                                squeeze=False)
    for axis, (name, curves) in zip(axes[0], all_curves.items()):
        for strategy, runs in curves.items():
            # percent above the best; before the first passing one, off the top
            data = numpy.clip(numpy.array(runs) * 100, 1e-3, 1e3)
            x = numpy.arange(1, data.shape[1] + 1)
            line, = axis.plot(x, numpy.median(data, axis=0), label=strategy)
            axis.fill_between(x, numpy.percentile(data, 10, axis=0),
                              numpy.percentile(data, 90, axis=0), color=line.get_color(),
                              alpha=0.15)
        axis.axhline(1, color="grey", linewidth=0.8, linestyle=":")
        axis.set_yscale("log")
        axis.set_ylim(1e-2, 100)
        axis.set_title(name, fontsize=10)
        axis.set_xlabel("evaluations")
    axes[0][0].set_ylabel("best so far: % above the best")
    axes[0][-1].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?")
    parser.add_argument("results", nargs="?")
    parser.add_argument("--landscapes", default="reduction,waves,matmul,stride,convolution")
    parser.add_argument("--strategies", default="random,tpe,cmaes,tpe-local,bo,bo-local")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--max-evals", type=int, default=60)
    parser.add_argument("--plot", metavar="PNG")
    args = parser.parse_args()
    if args.spec:
        landscapes = {Path(args.spec).stem: (args.spec, args.results)}
    else:
        from support import tunelandscape
        folder = Path(tempfile.mkdtemp(prefix="tune-bench-"))
        landscapes = {name: tuple(map(str, tunelandscape.write(folder, name)))
                      for name in args.landscapes.split(",")}
    curves = {name: compare(name, spec, results, args.strategies.split(","), args.seeds,
                            args.max_evals)
              for name, (spec, results) in landscapes.items()}
    if args.plot:
        plot(args.plot, curves)


if __name__ == "__main__":
    main()
