"""`history check` on the H200's own noise, from results already measured
there (no GPU): histories of a 9-kernel suite whose every commit is one
fresh process's results, drawn (with replacement) from the processes stored
in bench/verdicts/results/verdicts_h200_*.json, with steps injected at known commits.

A commit's 9 points come from one stored process, as a CI job's do, so each
history keeps what the processes really share (the shift a process adds to
every kernel it times; history/process_shift.py) and what is each kernel's
own (a layer norm or conv1d slow by 0.3-0.5 µs in 1 process of 10). Each
process's values are its differences from its experiment's medians, so the
experiments (different sessions, machines and code) can be pooled.

- one process a commit: the 32 suites launched with `--samples` (one process
  each) in four experiments;
- the recipe (`--processes 3` or 4 a commit): the 16 pooled suites.

Steps as in bench/history/history_detection.py: 1-3 per series at least 25 commits
apart, 5, 10 and 20% both ways, and 3% on kernels of 50 µs and more. Found:
a change point within 1 commit of the step; false: one more than 3 commits
from every step, and every change point of the histories without steps. The
verdicts come from `history check`'s own code (check.judge_all) on series
built in memory; "without the shift taken off" judges each series alone.

    python bench/history/history_stored_noise.py [--histories 60] [--commits 200] [--seed 1]
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "history"))
from cubinrun.history.check import judge, judge_all  # noqa: E402
from cubinrun.history.store import Point, Series  # noqa: E402
from history_detection import step_plan  # noqa: E402

RESULTS = REPO / "bench" / "verdicts" / "results"        # the verdicts bench's processes
# (file, mode) of each experiment: "before" is landed main's files of 2026-12-04
ONE_PROCESS = [("verdicts_h200_before.json", None), ("verdicts_h200_processes4.json", "old"),
               ("verdicts_h200_processes4.json", "one"), ("verdicts_h200_processes3.json", "one")]
RECIPE = [("verdicts_h200_processes4.json", "recipe"), ("verdicts_h200_processes3.json", "recipe")]
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def experiment(name: str, mode: str | None) -> list[dict[str, float]]:
    """One experiment's processes, each as {series: median µs}."""
    data = json.loads((RESULTS / name).read_text())
    if mode is None:        # the first bench's layout: per run, the processes' medians
        runs = {key.replace(".yaml", ""): v["median_us"] for key, v in data["runs"].items()}
        return [{key: values[i] for key, values in runs.items()}
                for i in range(len(next(iter(runs.values()))))]
    return data["modes"][mode]["medians"]


def deviations(experiments) -> tuple[dict[str, float], list[dict[str, float]]]:
    """Each series' typical median, and each process as its differences (µs)
    from its own experiment's medians."""
    processes, levels = [], collections.defaultdict(list)
    for runs in experiments:
        names = set.intersection(*(set(k for k, v in p.items() if v) for p in runs))
        middle = {n: float(np.median([p[n] for p in runs])) for n in names}
        for n in names:
            levels[n].append(middle[n])
        processes += [{n: p[n] - middle[n] for n in names} for p in runs]
    shared = set.intersection(*(set(p) for p in processes))
    return {n: float(np.median(levels[n])) for n in sorted(shared)}, processes


def histories(rng, levels, processes, commits):
    """One suite's history with steps and one without: per series its values
    and its steps [(commit, factor)]."""
    for stepped in (True, False):
        drawn = rng.integers(0, len(processes), commits)
        suite = {}
        for name, level in levels.items():
            sizes = [1.03, 1.05, 1.10, 1.20] if level >= 50 else [1.05, 1.10, 1.20]
            steps = step_plan(rng, commits, sizes) if stepped else []
            base = np.full(commits, level)
            for at, factor in steps:
                base[at:] *= factor
            suite[name] = (base + np.array([processes[i][name] for i in drawn]), steps)
        yield suite


def as_series(name: str, values) -> Series:
    points = [Point(f"{i:04d}", START + datetime.timedelta(hours=i), float(v), None,
                    None, None, None, False, 1) for i, v in enumerate(values)]
    return Series(name, name, name, {}, "H200", points)


def tally(suites, shared: bool) -> dict:
    counts = {"5%+": [0, 0], "3% long": [0, 0], "false": 0, "commits": 0,
              "missed": collections.Counter()}
    for suite in suites:
        series = [as_series(name, values) for name, (values, _) in suite.items()]
        since = series[0].points[-1].date
        verdicts = judge_all(series, since, 0.03) if shared else \
            [judge(s, since, 0.03) for s in series]
        for verdict, (name, (values, steps)) in zip(verdicts, suite.items()):
            found = [int(step.commit) for step in verdict.steps]
            counts["commits"] += len(values)
            counts["false"] += sum(all(abs(f - at) > 3 for at, _ in steps) for f in found)
            for at, factor in steps:
                size = abs(math.log(factor))
                bucket = "5%+" if size >= math.log(1.05) - 1e-9 else "3% long"
                hit = any(abs(f - at) <= 1 for f in found)
                counts[bucket][0] += hit
                counts[bucket][1] += 1
                if not hit:
                    counts["missed"][f"{name} {max(factor, 1 / factor) - 1:.0%}"] += 1
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--histories", type=int, default=60, help="suites with steps (and as "
                        "many without)")
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.histories} suite histories of {args.commits} commits with steps and "
          f"{args.histories} without, seed {args.seed}\n")
    print("| each commit | shift taken off | processes drawn from | 5%+ steps within 1 commit | "
          "3% steps, kernels >= 50 µs | false change points per 1000 commit-series |")
    print("| --- | --- | --- | --- | --- | --- |")
    missed = {}
    for label, sources in (("one process", ONE_PROCESS), ("`--processes` 3-4", RECIPE)):
        levels, processes = deviations([experiment(*s) for s in sources])
        for shared in (True, False):
            rng = np.random.default_rng(args.seed)     # the same histories both ways
            suites = [s for _ in range(args.histories)
                      for s in histories(rng, levels, processes, args.commits)]
            got = tally(suites, shared)
            cells = [f"{100 * hit / max(total, 1):.1f}% ({hit}/{total})"
                     for hit, total in (got["5%+"], got["3% long"])]
            print(f"| {label} | {'yes' if shared else 'no'} | {len(processes)} | {cells[0]} | "
                  f"{cells[1]} | {1000 * got['false'] / got['commits']:.2f} |")
            missed[f"{label}, shift taken off: {'yes' if shared else 'no'}"] = got["missed"]
    print("\nsteps missed:")
    for label, counter in missed.items():
        print(f"- {label}: " + (", ".join(f"{k} x{v}" for k, v in counter.most_common())
                                or "none"))


if __name__ == "__main__":
    main()
