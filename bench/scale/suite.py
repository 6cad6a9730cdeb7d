"""One command for many runs against one process per run, on the GPU.

1. Every configs/*.yaml except fault.yaml: `cubinrun launch --json A B ...`
   (one worker, CUDA started once) against one `cubinrun launch --json SPEC`
   process per spec, rounds interleaved. Goal: one command >= 3x faster.
   Per-run overhead beyond the timing budget is each result's `wall_s`
   minus `timing.elapsed_s` (the time spent timing): goal < 30 ms.
2. A 7-point sweep of the vector add, 2^16..2^28 elements, cold L2:
   `--axis "N[pow2]=[16:28:2]"` in one command against seven single runs.
   Goal: the medians agree within 2%.

    PYTHONPATH=. python3 bench/scale/suite.py OUTDIR [--rounds 3]

Prints two compact tables last and writes OUTDIR/suite.json (kept as it goes).

With `--noise`, instead: the same specs in one command with `--max-noise 0.5%`
against the fixed 100 ms budget, rounds alternating which goes first. Goal:
>= 30% less wall time, every median within 1% of the fixed-budget run's, and
the throttled samples each mode dropped (expected none). With two rounds or
more it also prints how far the first two fixed-budget commands are apart:
the goal's floor (bench/verdicts/process_shift.py looks at why). Writes
OUTDIR/suite_noise.json and the table to OUTDIR/suite_noise.txt.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
VECTOR_ADD = CONFIGS / "vector_add.yaml"
SWEEP = [2 ** e for e in range(16, 29, 2)]


def child_env() -> dict[str, str]:
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def launch(*args) -> tuple[float, list[dict], int]:
    """Wall seconds, the results, the exit code of one `cubinrun launch --json`."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--json",
                           *map(str, args)], capture_output=True, text=True, cwd=REPO,
                          env=child_env(), timeout=900)
    wall = time.perf_counter() - started
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr[-2000:]}") from None
    return wall, document.get("results", [document]), proc.returncode


def own_ms(result: dict) -> float:
    return 1000 * (result["wall_s"] - ((result.get("timing") or {}).get("elapsed_s") or 0.0))


MAX_NOISE = "0.5%"


def noise_stopping(specs: list[Path], out: Path, rounds: int) -> None:
    """--max-noise 0.5% against the fixed budget, all specs in one command each."""
    modes = {"budget": ["--rep", "100"], "noise": ["--rep", "100", "--max-noise", MAX_NOISE]}
    report: dict = {"specs": [p.name for p in specs], "rounds": []}
    launch(VECTOR_ADD, "--no-bench")                  # warm the launcher and NVRTC caches
    for round_ in range(rounds):
        entry = {}
        order = list(modes) if round_ % 2 == 0 else list(reversed(modes))
        for mode in order:
            wall, results, code = launch(*specs, *modes[mode])
            timings = [r.get("timing") or {} for r in results]
            entry[mode] = {"wall_s": wall, "exit_code": code,
                           "median_us": [t.get("median_us") for t in timings],
                           "samples": [t.get("samples") for t in timings],
                           "stopped": [t.get("stopped") for t in timings],
                           "throttled": sum(t.get("throttled_samples") or 0 for t in timings),
                           # one per command (per device): a whole-command shift of
                           # the small kernels' medians is compared against it
                           "event_offset_us": next((t["event_offset_us"] for t in timings
                                                    if t.get("event_offset_us")), None),
                           "sm_clock_mhz": [t.get("sm_clock_mhz") for t in timings]}
        report["rounds"].append(entry)
        offsets = {m: entry[m]["event_offset_us"] or 0.0 for m in modes}
        print(f"round {round_}: budget {entry['budget']['wall_s']:.2f} s (event offset "
              f"{offsets['budget']:.3f} us), --max-noise {entry['noise']['wall_s']:.2f} s "
              f"({offsets['noise']:.3f} us)", flush=True)
        (out / "suite_noise.json").write_text(json.dumps(report, indent=2))

    def med(mode: str, key: str, i: int):
        values = [r[mode][key][i] for r in report["rounds"] if r[mode][key][i] is not None]
        return statistics.median(values) if values else None
    budget_wall = statistics.median(r["budget"]["wall_s"] for r in report["rounds"])
    noise_wall = statistics.median(r["noise"]["wall_s"] for r in report["rounds"])
    lines = [f"{len(specs)} specs in one command, medians of {rounds} rounds: fixed 100 ms "
             f"budget {budget_wall:.2f} s, --max-noise {MAX_NOISE} {noise_wall:.2f} s "
             f"({100 * (1 - noise_wall / budget_wall):.0f}% less; goal >= 30%)",
             "throttled samples dropped: budget "
             f"{sum(r['budget']['throttled'] for r in report['rounds'])}, noise "
             f"{sum(r['noise']['throttled'] for r in report['rounds'])} (expected 0)",
             "spec                     | budget us | samples | noise us | samples | ratio"]
    worst = 0.0
    for i, name in enumerate(report["specs"]):
        a, b = med("budget", "median_us", i), med("noise", "median_us", i)
        ratio = b / a if a and b else None
        if ratio is not None:
            worst = max(worst, abs(ratio - 1))
        lines.append(f"{name[:24]:24} | {a or 0:9.2f} | {med('budget', 'samples', i) or 0:7.0f} "
                     f"| {b or 0:8.2f} | {med('noise', 'samples', i) or 0:7.0f} | "
                     + ("n/a" if ratio is None else f"{ratio:.4f}"))
    lines.append(f"largest median difference {100 * worst:.2f}% (goal within 1%)")
    if len(report["rounds"]) > 1:
        # the goal's floor: how well the fixed budget agrees with itself from one
        # process to the next (the first two rounds' fixed-budget commands)
        first, second = (r["budget"]["median_us"] for r in report["rounds"][:2])
        apart = [abs(b / a - 1) for a, b in zip(first, second) if a and b]
        lines.append(f"fixed budget against itself, rounds 0 and 1: largest difference "
                     f"{100 * max(apart):.2f}%, {sum(d > 0.01 for d in apart)} of {len(apart)} "
                     "specs beyond 1%")
    text = "\n".join(lines)
    (out / "suite_noise.txt").write_text(text + "\n")
    print("\n" + text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for suite.json")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--noise", action="store_true",
                        help=f"--max-noise {MAX_NOISE} against the fixed budget instead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    specs = sorted(p for p in CONFIGS.glob("*.yaml") if p.name != "fault.yaml")
    if args.noise:
        return noise_stopping(specs, args.out, args.rounds)
    report: dict = {"specs": [p.name for p in specs], "suite": [], "sweep": []}

    def save():
        (args.out / "suite.json").write_text(json.dumps(report, indent=2))

    launch(VECTOR_ADD, "--no-bench")                  # warm the launcher and NVRTC caches
    for round_ in range(args.rounds):
        one_wall, one_results, one_code = launch(*specs)
        loop_wall, loop_results = 0.0, []
        for spec in specs:
            wall, results, _ = launch(spec)
            loop_wall += wall
            loop_results += results
        report["suite"].append({
            "round": round_, "one_command_s": one_wall, "exit_code": one_code,
            "process_loop_s": loop_wall,
            "one_command_run_ms": {r["spec"]: own_ms(r) for r in one_results},
            "process_loop_run_ms": {r["spec"]: own_ms(r) for r in loop_results},
            "statuses": [r["status"] for r in one_results]})
        print(f"suite round {round_}: one command {one_wall:.2f} s, loop {loop_wall:.2f} s",
              flush=True)
        save()

        sweep_wall, sweep_results, _ = launch(VECTOR_ADD, "--axis", "N[pow2]=[16:28:2]",
                                              "--l2", "cold")
        singles_wall, singles = 0.0, []
        for n in SWEEP:
            wall, results, _ = launch(VECTOR_ADD, "--set", f"N={n}", "--l2", "cold")
            singles_wall += wall
            singles += results
        report["sweep"].append({
            "round": round_, "one_command_s": sweep_wall, "single_runs_s": singles_wall,
            "sweep_median_us": [r["timing"]["median_us"] for r in sweep_results],
            "single_median_us": [r["timing"]["median_us"] for r in singles],
            "sweep_sm_clock_mhz": [r["timing"].get("sm_clock_mhz") for r in sweep_results],
            "single_sm_clock_mhz": [r["timing"].get("sm_clock_mhz") for r in singles]})
        print(f"sweep round {round_}: one command {sweep_wall:.2f} s, "
              f"seven runs {singles_wall:.2f} s", flush=True)
        save()

    suite = report["suite"]
    one = statistics.median(r["one_command_s"] for r in suite)
    loop = statistics.median(r["process_loop_s"] for r in suite)
    later = [v for r in suite for v in list(r["one_command_run_ms"].values())[1:]]
    first = statistics.median(list(r["one_command_run_ms"].values())[0] for r in suite)
    print(f"\n{len(specs)} specs (configs/*.yaml but fault.yaml), medians of {args.rounds} rounds")
    print("mode                 | wall s | per-run overhead beyond timing, ms")
    print(f"one command          | {one:6.2f} | first {first:.0f}; others median "
          f"{statistics.median(later):.1f}, max {max(later):.1f}")
    print(f"one process per spec | {loop:6.2f} | median "
          f"{statistics.median(v for r in suite for v in r['process_loop_run_ms'].values()):.1f}"
          " (+ process start)")
    print(f"speed-up {loop / one:.2f}x (goal >= 3x)")

    sweep = report["sweep"]
    print(f"\nvector add sweep 2^16..2^28 cold: one command "
          f"{statistics.median(r['one_command_s'] for r in sweep):.2f} s, seven runs "
          f"{statistics.median(r['single_runs_s'] for r in sweep):.2f} s")
    print("N     | sweep us  | single us | ratio  (medians over rounds; goal within 2%)")
    for i, n in enumerate(SWEEP):
        a = statistics.median(r["sweep_median_us"][i] for r in sweep)
        b = statistics.median(r["single_median_us"][i] for r in sweep)
        print(f"2^{n.bit_length() - 1:<3} | {a:9.2f} | {b:9.2f} | {a / b:6.3f}")


if __name__ == "__main__":
    main()
