"""cubinrun's tune strategies against Kernel Tuner's, replayed on real landscapes
(CPU; no GPU): the mean excess of the best found over the landscape's best
after 20, 60 and 200 evaluations, with its standard error over seeds.

    python bench/tune/tune_real.py                               # every landscape, 20 seeds
    python bench/tune/tune_real.py --landscapes conv_a100 --seeds 5 --strategies bo-local,kt:pso
    python bench/tune/tune_real.py --jobs 2 --out bench/tune/results/tune_real.json

The landscapes are bench/tune/landscapes/ (index.json: where each came from, its
licence, and its role): Kernel Tuner caches of exhaustive searches on real
GPUs, converted by bench/tune/kt_landscape.py. Half are `choose` landscapes (the
default strategy was chosen on them), half `confirm` (held out: looked at only
to confirm the choice). Each strategy replays each landscape as `tune
--replay` does, in process: cubinrun's through its Search over an in-memory
study, Kernel Tuner's (`kt:NAME`, Kernel Tuner 1.5, a bench-only dependency)
through its simulation mode over a cache written from the same landscape,
with the same restrictions, every strategy with `max_fevals` 200. An
evaluation is a configuration measured for the first time (a failed one
counts; a repeated one does not), for both tools alike. `random` is not run:
its expected excess is computed exactly (sampling without replacement), so its
standard error is 0. Where a strategy stopped before n evaluations, its best at
n is the best it ended with; where it found nothing that passed, the
landscape's worst passing value stands in.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import statistics
import importlib.util
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("cubinrun") is None:      # run from a checkout, not installed
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "tune"))
LANDSCAPES = REPO / "bench" / "tune" / "landscapes"
BUDGETS = (20, 60, 200)
OURS = ("bo-local", "bo", "tpe", "tpe-local")
THEIRS = ("pso", "adaptive_tabu_greywolf", "firefly_algorithm", "dual_annealing", "bayes_opt",
          "genetic_algorithm", "greedy_ils", "simulated_annealing", "diff_evo", "mls",
          "basinhopping")


_INITIAL = 10           # gaussian.INITIAL and local.LOCAL_FROM as cubinrun has them


class Landscape:
    """One landscape made ready to replay: its space, evaluator and best."""

    def __init__(self, name: str, folder: Path):
        from kt_landscape import read_lines
        from cubinrun.tune.evaluate import OBJECTIVES, ReplayEvaluator
        from cubinrun.tune.space import load_space
        self.name = name
        folder.mkdir(parents=True, exist_ok=True)
        self.spec = str(folder / f"{name}.yaml")
        (folder / f"{name}.yaml").write_bytes((LANDSCAPES / f"{name}.yaml").read_bytes())
        self.results = folder / f"{name}.jsonl"
        lines = read_lines(LANDSCAPES / f"{name}.jsonl.gz")
        self.results.write_text("".join(json.dumps(line) + "\n" for line in lines))
        self.space = load_space(self.spec, {})
        self.evaluator = ReplayEvaluator(str(self.results), OBJECTIVES["time"])
        self.values = sorted(line["timing"]["median_us"] for line in lines
                             if line.get("exit_code") == 0)
        self.best, self.worst = self.values[0], self.values[-1]
        self.size = len(self.space.valid)
        self.folder = folder

    def excess(self, found: list[float | None]) -> list[float]:
        """The excess of the best so far at each budget, in percent."""
        out = []
        for n in BUDGETS:
            passing = [v for v in found[:n] if v is not None]
            out.append((min(passing) if passing else self.worst) / self.best * 100 - 100)
        return out

    def random_expectation(self) -> list[float]:
        """The exact expected excess of n distinct points drawn uniformly from
        the valid ones (failed ones included, as a replay counts them)."""
        out = []
        total = self.size
        for n in BUDGETS:
            n = min(n, total)
            # P(the i best passing values all missed) = C(total - i, n) / C(total, n)
            def missed(i):
                return 0.0 if total - i < n else math.exp(
                    math.lgamma(total - i + 1) - math.lgamma(total - i - n + 1)
                    - math.lgamma(total + 1) + math.lgamma(total - n + 1))
            expected, before = 0.0, 1.0
            for i, value in enumerate(self.values, 1):
                after = missed(i)
                expected += value * (before - after)
                before = after
            expected += self.worst * before         # nothing that passed was drawn
            out.append(expected / self.best * 100 - 100)
        return out


def run_ours(land: Landscape, strategy: str, seed: int, max_evals: int) -> list[float | None]:
    """`bo-local:random-steps`: bo-local as it was before its local steps were
    ranked by the GP (a neighbour drawn at random), for comparison."""
    import optuna
    from cubinrun.tune import search as searching
    from cubinrun.tune.evaluate import OBJECTIVES
    from cubinrun.tune.search import Budget, Search
    from cubinrun.tune import gaussian, local
    strategy, _, variant = strategy.partition(":")
    searching.RANKED_STEPS = variant != "random-steps"
    # `bo-local:initial=N`: N random points before the model (and the local steps) start
    start = int(variant.split("=")[1]) if variant.startswith("initial=") else _INITIAL
    gaussian.INITIAL, local.LOCAL_FROM = start, start
    from cubinrun.tune.strategies import make_sampler, require_optuna
    require_optuna()
    objective = OBJECTIVES["time"]
    study = optuna.create_study(direction="minimize", sampler=make_sampler(strategy, seed))
    search = Search(land.space, study, strategy, land.evaluator, objective,
                    Budget(max_evals), lambda point: "replay", seed)
    # the study is in this process's memory: no other process can have asked
    # for a point first, and the check (over every trial) is a tenth of a run
    search._contested = lambda asked: False
    return [e.value if e.ok else None for e in search.run()]


def kt_cache(land: Landscape) -> tuple[str, dict]:
    """A Kernel Tuner cache of the landscape (written once) and tune_kernel's
    arguments for it."""
    import yaml
    from kt_landscape import to_cache
    path = land.folder / f"{land.name}.kt.json"
    spec = yaml.safe_load(Path(land.spec).read_text())
    axes = [a.name for a in land.space.axes]
    fixed = {k: v for k, v in spec["vars"].items() if k not in axes}
    if not path.exists():
        to_cache(land.spec, str(land.results), str(path), fixed)
    document = json.loads(path.read_text())
    return str(path), dict(kernel_name=document["kernel_name"], kernel_source="",
                           problem_size=(1,), arguments=[],
                           tune_params=document["tune_params"],
                           restrictions=spec.get("constraints") or None)


def run_theirs(land: Landscape, strategy: str, seed: int, max_evals: int) -> list[float | None]:
    import numpy
    from kernel_tuner import tune_kernel
    cache, arguments = kt_cache(land)
    random.seed(seed)
    numpy.random.seed(seed)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(**arguments, cache=cache, simulation_mode=True,
                                 strategy=strategy, quiet=True, verbose=False,
                                 strategy_options={"max_fevals": max_evals})
    axes = [a.name for a in land.space.axes]
    found, seen = [], set()
    for result in results:
        k = tuple(result[a] for a in axes)
        if k in seen:
            continue
        seen.add(k)
        value = result.get("time")
        found.append(value * 1000 if isinstance(value, (int, float)) and value < 1e19 else None)
    return found


def replay(task: tuple) -> tuple[str, str, list[list[float]], float]:
    """(landscape, strategy, each seed's excess at the budgets, seconds a run)."""
    name, strategy, seeds, folder, max_evals = task
    global BUDGETS
    BUDGETS = tuple(b for b in BUDGETS if b <= max_evals)
    land = _landscape(name, Path(folder))
    started = time.perf_counter()
    rows = []
    for seed in seeds:
        found = run_theirs(land, strategy[3:], seed, max_evals) if strategy.startswith("kt:") \
            else run_ours(land, strategy, seed, max_evals)
        rows.append(land.excess(found))
    return name, strategy, rows, (time.perf_counter() - started) / len(seeds)


_LOADED: dict[str, Landscape] = {}


def _landscape(name: str, folder: Path) -> Landscape:
    if name not in _LOADED:
        _LOADED[name] = Landscape(name, folder / f"{os.getpid()}")
    return _LOADED[name]


def summary(rows: list[list[float]]) -> list[tuple[float, float]]:
    """(mean, standard error) at each budget the rows reach."""
    out = []
    for column in zip(*rows):
        mean = statistics.fmean(column)
        se = statistics.stdev(column) / math.sqrt(len(column)) if len(column) > 1 else 0.0
        out.append((mean, se))
    return out


def table(title: str, stats: dict[str, list[tuple[float, float]]]) -> str:
    lines = [f"\n{title}", "| strategy | " + " | ".join(f"{n} evals" for n in BUDGETS) + " |",
             "| --- |" + " ---: |" * len(BUDGETS)]
    for strategy, cells in sorted(stats.items(), key=lambda kv: kv[1][min(1, len(kv[1]) - 1)][0]):
        shown = [f"{m:.2f} ± {s:.2f}%" for m, s in cells] + ["-"] * (len(BUDGETS) - len(cells))
        lines.append(f"| {strategy} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def pooled(stats: dict[str, dict[str, list[tuple[float, float]]]], names: list[str],
           strategy: str) -> list[tuple[float, float]]:
    """The mean over landscapes of each one's mean excess, and its standard error
    (at the budgets every landscape's runs reach; none if one lacks the strategy)."""
    cells = [stats[n][strategy] for n in names if strategy in stats[n]]
    if len(cells) < len(names):
        return []
    return [(statistics.fmean(c[i][0] for c in cells),
             math.sqrt(sum(c[i][1] ** 2 for c in cells)) / len(cells))
            for i in range(min(len(c) for c in cells))]


def report(raw: dict[str, dict[str, list[list[float]]]], seeds: list[int], index: dict,
           folder: str) -> str:
    """Each landscape's table, then the mean over the `choose` ones and over the
    `confirm` ones."""
    names = list(raw)
    stats = {n: {s: summary(rows) for s, rows in raw[n].items()} for n in names}
    text = [f"mean excess of the best found over the landscape's best ± its standard error "
            f"over {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}); random: the exact "
            f"expectation; '-': not run that far"]
    for n in names:
        land = _landscape(n, Path(folder))
        stats[n]["random (exact)"] = [(v, 0.0) for v in land.random_expectation()]
        meta = index[n]
        text.append(table(f"{n} ({meta['kernel']}, {meta['device']}, {land.size} configurations,"
                          f" {sum(v <= land.best * 1.01 for v in land.values)} within 1% of the "
                          f"best, role {meta['role']})", stats[n]))
    for role in ("choose", "confirm"):
        group = [n for n in names if index[n]["role"] == role]
        if group:
            strategies = {s for n in group for s in stats[n]}
            pooled_stats = {s: pooled(stats, group, s) for s in strategies}
            text.append(table(f"the mean over the {role} landscapes ({', '.join(group)})",
                              {s: c for s, c in pooled_stats.items() if c}))
    return "\n".join(text)


def main() -> None:
    global BUDGETS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    index = json.loads((LANDSCAPES / "index.json").read_text())
    parser.add_argument("--landscapes", default=",".join(index))
    parser.add_argument("--strategies",
                        default=",".join(OURS + tuple(f"kt:{s}" for s in THEIRS)))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--max-evals", type=int, default=max(BUDGETS),
                        help="run each strategy this far (the budgets up to it are reported)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", help="JSON of every seed's excess (and the tables beside, .txt)")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="report the runs of these --out files together (nothing is run)")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="tune-real-")
    if args.merge:
        raw, seeds = {}, None
        for path in args.merge:
            document = json.loads(Path(path).read_text())
            seeds = seeds or document["seeds"]
            for name, runs in document["excess_percent"].items():
                raw.setdefault(name, {}).update(runs)
        text = report(raw, seeds, index, folder)
        print(text)
        if args.out:
            rounded = {n: {s: [[round(v, 4) for v in row] for row in rows]
                           for s, rows in runs.items()} for n, runs in raw.items()}
            Path(args.out).write_text(json.dumps({"budgets": BUDGETS, "seeds": seeds,
                                                  "excess_percent": rounded}))
            Path(args.out).with_suffix(".txt").write_text(text + "\n")
        return
    BUDGETS = tuple(b for b in BUDGETS if b <= args.max_evals)
    names = args.landscapes.split(",")
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    tasks = [(n, s, seeds, folder, args.max_evals) for n in names
             for s in args.strategies.split(",")]
    raw: dict[str, dict[str, list[list[float]]]] = {n: {} for n in names}
    seconds: dict[str, dict[str, float]] = {n: {} for n in names}
    if args.jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            done = list(_logged(pool.imap_unordered(replay, tasks)))
    else:
        done = list(_logged(map(replay, tasks)))
    for name, strategy, rows, s in done:
        raw[name][strategy], seconds[name][strategy] = rows, s
    text = report(raw, seeds, index, folder)
    print(text)
    if args.out:
        Path(args.out).write_text(json.dumps({"budgets": BUDGETS, "seeds": seeds,
                                              "excess_percent": raw, "seconds_a_run": seconds},
                                             indent=1))
        Path(args.out).with_suffix(".txt").write_text(text + "\n")


def _logged(results):
    for name, strategy, rows, s in results:
        print(f"  {name} {strategy}: {s:.2f} s a run", file=sys.stderr, flush=True)
        yield name, strategy, rows, s


if __name__ == "__main__":
    main()
