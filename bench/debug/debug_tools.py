"""What the debugging aids cost, on the GPU machine.

1. Wall time of fresh processes on the vector add (2^20, the sample spec):
   `launch --no-bench` (the baseline: one checked launch), the same with
   `--no-guard`, `--repeat 5`, `--sanitize` with each tool, and `profile`.
   Each command runs once to warm the caches, then `--runs` times
   interleaved; median and min in seconds.
2. Guard bands' effect on timing: the 2^24 vector add's measured median with
   guards (the default) and with `--no-guard`, alternating, `--rounds`
   rounds; the table gives the median of each side's medians and the ratio
   (goal: within 1%). Guards add 2 x 256 bytes per buffer (1.5 KiB here).

Run from the repo root: `python3 bench/debug/debug_tools.py [--runs 3] [--rounds 8]`.
Results go to $OUT/debug_tools.{txt,json} (or bench/debug/results/).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = "configs/vector_add.yaml"
BIG = ["--set", "N=16777216"]


def tool_available(name: str) -> bool:
    return bool(shutil.which(name) or Path("/usr/local/cuda/bin", name).is_file())


def wall_commands() -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "cubinrun"]
    lines = {
        "launch --no-bench": [*cli, "launch", "--no-bench", SPEC],
        "launch --no-bench --no-guard": [*cli, "launch", "--no-bench", "--no-guard", SPEC],
        "launch --no-bench --repeat 5": [*cli, "launch", "--no-bench", "--repeat", "5", SPEC],
    }
    if tool_available("compute-sanitizer"):
        for tool in ("memcheck", "racecheck", "initcheck", "synccheck"):
            lines[f"launch --sanitize {tool}"] = [*cli, "launch", SPEC, "--sanitize", tool]
    if tool_available("ncu"):
        lines["profile"] = [*cli, "profile", SPEC]
    return lines


def wall_s(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def median_us(extra: list[str]) -> float:
    argv = [sys.executable, "-m", "cubinrun", "launch", "--json", SPEC, *BIG, *extra]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)["timing"]["median_us"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    out = Path(os.environ.get("OUT") or Path(__file__).with_name("results"))
    out.mkdir(parents=True, exist_ok=True)

    commands = wall_commands()
    walls: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        wall_s(argv)                                    # warm the caches
    for _ in range(args.runs):
        for name, argv in commands.items():
            walls[name].append(wall_s(argv))

    guarded, bare = [], []
    median_us([])                                       # warm
    for round_ in range(args.rounds):
        order = [(guarded, []), (bare, ["--no-guard"])]
        for samples, extra in order if round_ % 2 == 0 else reversed(order):
            samples.append(median_us(extra))

    lines = [f"{'command (vector add 2^20)':40s} {'median s':>9s} {'min s':>7s}"]
    for name, values in walls.items():
        lines.append(f"{name:40s} {statistics.median(values):9.2f} {min(values):7.2f}")
    g, b = statistics.median(guarded), statistics.median(bare)
    lines += ["", f"vector add 2^24, median of {args.rounds} runs' medians:",
              f"  guards on  {g:8.2f} us   (runs: {', '.join(f'{v:.2f}' for v in guarded)})",
              f"  --no-guard {b:8.2f} us   (runs: {', '.join(f'{v:.2f}' for v in bare)})",
              f"  ratio      {g / b:8.4f}   ({100 * (g / b - 1):+.2f}%)",
              "  memory: 2 x 256 B per buffer (3 buffers: 1.5 KiB)"]
    text = "\n".join(lines)
    (out / "debug_tools.txt").write_text(text + "\n")
    (out / "debug_tools.json").write_text(json.dumps(
        {"wall_s": walls, "guards_median_us": guarded, "no_guard_median_us": bare}, indent=2))
    print(text)


if __name__ == "__main__":
    main()
