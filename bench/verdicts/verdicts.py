"""Does `compare` give identical code a verdict when each side is its own
process, as in CI? And does it still find a real slowdown?

A suite of 9 runs (vector add at 2^16, 2^20 and 2^24 elements, the Triton
softmax and layer norm samples, conv1d_constant, matmul_tiled, empty0 and
work) is launched in ROUNDS fresh processes per mode, the modes interleaved
round by round so the machine's drift falls on all of them alike:

- old: the tree in --old (an older cubinrun, `git archive REV`), defaults
  plus `--samples --jsonl`, judged by its own `compare`;
- one: this tree, one process a run, `--samples --jsonl` (the result files
  written before --processes), judged by this tree's compare;
- recipe: this tree, the documented CI recipe (`--processes P --jsonl`).

Every pair of rounds is compared at defaults (28 pairs for 8 rounds): how
many pairs exit 5, and how many verdicts are SLOWER or FASTER. Then, with
the recipe, work.yaml (87 us) against ITERS +5% and a 5.5 us work against
ITERS +15%, every base round against every slow round: how many are SLOWER.
Last, each mode's wall per suite, side by side, and each run's spread of
medians over the rounds.

    PYTHONPATH=. python3 bench/verdicts/verdicts.py OUTDIR [--rounds 8] [--processes 4] [--old DIR]

With --fidelity: the vector add at 2^16..2^28, cold and hot, pooled over
--processes 8 in one command, against ncu's median over NCU_PROCESSES fresh
processes (30 launches each), with ncu's own spread between its processes.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITE = [REPO / "bench/verdicts/specs/vector_add_sizes.yaml",
         *(REPO / "configs" / name for name in (
             "triton_softmax.yaml", "triton_layer_norm.yaml", "conv1d_constant.yaml",
             "matmul_tiled.yaml", "empty0.yaml", "work.yaml"))]
WORK = REPO / "configs/work.yaml"
SLOWDOWNS = {"work 87 us +5%": (8192, 8602), "work 5.5 us +15%": (360, 414)}
NCU_PROCESSES = 3
FIDELITY_SIZES = (16, 20, 24, 28)


def env_for(tree: Path) -> dict[str, str]:
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(REPO)]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), *rest])}


def cubinrun(tree: Path, *args) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    # cwd is the tree: `python -m` puts the working folder first on sys.path
    proc = subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=tree,
                          env=env_for(tree), capture_output=True, text=True, timeout=900)
    return time.perf_counter() - started, proc


def verdicts_of(files: list[Path], tree: Path | None) -> dict:
    """Every pair compared: exit-5 pairs and the verdicts' counts. `tree`: judge
    with that tree's compare command (an old one); None: this tree's, in process."""
    pairs, counts = 0, {}
    for a, b in itertools.combinations(files, 2):
        if tree is None:
            from cubinrun.results.compare import compare_results
            from cubinrun.results.reader import read_results
            found = [c.verdict for c in compare_results(read_results(a), read_results(b))]
        else:
            _, proc = cubinrun(tree, "compare", a, b, "--json")
            found = [c["verdict"] for c in json.loads(proc.stdout)["comparisons"]]
        pairs += "SLOWER" in found
        for verdict in found:
            counts[verdict] = counts.get(verdict, 0) + 1
    return {"pairs": len(files) * (len(files) - 1) // 2, "exit_5": pairs, "verdicts": counts}


def medians_of(path: Path) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        key = Path(r["spec"]).stem + "".join(f" {k}={v}" for k, v in (r.get("point") or {}).items())
        out[key] = (r.get("timing") or {}).get("median_us")
    return out


def slowdowns(out: Path, rounds: int, processes: int) -> dict:
    from cubinrun.results.compare import compare_results
    from cubinrun.results.reader import read_results
    found = {}
    for name, (base, slow) in SLOWDOWNS.items():
        files = {iters: [] for iters in (base, slow)}
        for round_ in range(rounds):
            for iters in (base, slow):
                path = out / f"work_{iters}_{round_}.jsonl"
                cubinrun(REPO, "launch", WORK, "--set", f"ITERS={iters}", "--processes",
                         processes, "--jsonl", path)
                files[iters].append(path)
        verdicts = []
        for a in files[base]:
            for b in files[slow]:
                base_results, slow_results = read_results(a), read_results(b)
                for r in slow_results:
                    r["point"] = {}
                for r in base_results:
                    r["point"] = {}
                verdicts.append(next(compare_results(base_results, slow_results)).verdict)
        found[name] = {"pairs": len(verdicts), "slower": verdicts.count("SLOWER"),
                       "verdicts": {v: verdicts.count(v) for v in set(verdicts)}}
        print(f"{name}: SLOWER in {found[name]['slower']} of {len(verdicts)}", flush=True)
    return found


def fidelity(out: Path) -> list[dict]:
    sys.path.insert(0, str(REPO / "bench" / "timing"))
    from timing_fidelity import ncu_median
    rows = []
    axis = f"N[pow2]=[{','.join(map(str, FIDELITY_SIZES))}]"
    for l2 in ("cold", "hot"):
        _, proc = cubinrun(REPO, "launch", REPO / "configs/vector_add.yaml", "--axis", axis,
                           "--l2", l2, "--processes", 8, "--json")
        results = json.loads(proc.stdout)["results"]
        for exponent, result in zip(FIDELITY_SIZES, results):
            timing = result["timing"]
            ncu = [ncu_median(2 ** exponent, l2, 30) for _ in range(NCU_PROCESSES)]
            ncu = [v for v in ncu if v is not None]
            row = {"size": f"2^{exponent}", "l2": l2, "events_us": timing["median_us"],
                   "events_spread": timing.get("process_spread"),
                   "ncu_us": statistics.median(ncu) if ncu else None,
                   "ncu_spread": (max(ncu) - min(ncu)) / statistics.median(ncu) if ncu else None}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--old", type=Path, help="an older tree (its cubinrun/ and bench/)")
    parser.add_argument("--no-slowdowns", action="store_true")
    parser.add_argument("--fidelity", action="store_true")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    modes = {"one": (REPO, ["--samples"]), "recipe": (REPO, ["--processes", args.processes])}
    if args.old:
        modes = {"old": (args.old.resolve(), ["--samples"]), **modes}
    cubinrun(REPO, "launch", REPO / "configs/vector_add.yaml", "--no-bench")   # warm the caches
    files: dict[str, list[Path]] = {m: [] for m in modes}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    for round_ in range(args.rounds):
        for mode, (tree, flags) in modes.items():
            path = args.out / f"{mode}_{round_}.jsonl"
            wall, proc = cubinrun(tree, "launch", *SUITE, *flags, "--jsonl", path)
            if proc.returncode != 0:
                print(f"{mode} round {round_}: exit {proc.returncode}: {proc.stderr[-600:]}")
            files[mode].append(path)
            walls[mode].append(wall)
            print(f"round {round_} {mode}: {wall:.2f} s", flush=True)
    report = {"modes": {}, "walls": walls}
    for mode, (tree, _) in modes.items():
        report["modes"][mode] = verdicts_of(files[mode], tree if mode == "old" else None)
        report["modes"][mode]["medians"] = [medians_of(p) for p in files[mode]]
    if not args.no_slowdowns:
        report["slowdowns"] = slowdowns(args.out, args.rounds, args.processes)
    if args.fidelity:
        report["fidelity"] = fidelity(args.out)
    (args.out / "verdicts.json").write_text(json.dumps(report, indent=1))
    print("\nmode    pairs exit 5   SLOWER+FASTER / verdicts   wall per suite (median)  vs old")
    base_wall = statistics.median(walls[next(iter(modes))])
    for mode, got in report["modes"].items():
        wrong = got["verdicts"].get("SLOWER", 0) + got["verdicts"].get("FASTER", 0)
        total = sum(got["verdicts"].values())
        wall = statistics.median(walls[mode])
        ratios = [w / b for w, b in zip(walls[mode], walls[next(iter(modes))])]
        print(f"{mode:7s} {got['exit_5']:3d} of {got['pairs']:3d}   {wrong:4d} of {total:4d}"
              f"              {wall:6.2f} s   {statistics.median(ratios):.2f}x "
              f"(pairs {min(ratios):.2f}-{max(ratios):.2f})   {got['verdicts']}")
    print("\nrun: spread of the median over rounds, per mode")
    for key in report["modes"][next(iter(modes))]["medians"][0]:
        cells = []
        for mode in modes:
            values = [m.get(key) for m in report["modes"][mode]["medians"] if m.get(key)]
            middle = statistics.median(values)
            cells.append(f"{mode} {middle:9.3f} us {100 * (max(values) - min(values)) / middle:5.2f}%")
        print(f"{key[:28]:28s} " + " | ".join(cells))
    for row in report.get("fidelity", []):
        ratio = row["events_us"] / row["ncu_us"] if row["ncu_us"] else None
        print(f"{row['size']:5s} {row['l2']:4s} events {row['events_us']:9.3f} us "
              f"(spread {100 * (row['events_spread'] or 0):.1f}%)  ncu "
              f"{row['ncu_us'] or 0:9.3f} us (spread {100 * (row['ncu_spread'] or 0):.1f}%)  "
              f"ratio {ratio or 0:.4f}")


if __name__ == "__main__":
    main()
