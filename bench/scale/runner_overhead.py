"""What the multi-run runner costs per run, measured on a CPU machine with the
fake driver (tests/fakecuda): no kernel runs, so every millisecond here is
cubinrun's own host work (spec, plan, host data, buffers, launch, check,
report, the worker's round trip).

Compares, for the same N runs of the vector add (a sweep of N):
- one `cubinrun launch SPEC --axis ...` (one worker process, CUDA "started"
  once, launcher, binary and module reused),
- one `cubinrun launch SPEC --set N=...` process per run (as a CI loop does).

Each run's own cost is `wall_s` of its result minus `timing.elapsed_s` (the
time spent timing), so the timing budget is left out by construction.

    python3 bench/scale/runner_overhead.py OUTDIR [--runs 8] [--rounds 3]

Prints a table last and writes OUTDIR/runner_overhead.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "configs" / "vector_add.yaml"
FAST = ["--warmup", "1", "--rep", "1"]
# A process that installs the fake driver, then is the cubinrun CLI.
CLI = ("import sys; import fakecuda.worker as w; w.install(); "
       "import cubinrun.runs.executor as e; e.WORKER_SETUP = 'fakecuda.worker:install'; "
       "from cubinrun.cli import main; main(sys.argv[1:])")


def env(libcuda: Path, cache: Path) -> dict[str, str]:
    paths = [str(REPO / "tests"), str(REPO),
             *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths),
            "CUBINRUN_LIBCUDA": str(libcuda), "CUBINRUN_CACHE_DIR": str(cache)}


def cli(environment, *args) -> tuple[float, list[dict]]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CLI, "launch", "--json", *map(str, args)],
                          capture_output=True, text=True, env=environment, timeout=600)
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):            # 1: the vector add's check fails on the fake
        raise RuntimeError(proc.stderr)
    document = json.loads(proc.stdout)
    return wall, document.get("results", [document])


def own_cost_ms(result: dict) -> float:
    timed = (result.get("timing") or {}).get("elapsed_s") or 0.0
    return 1000 * (result["wall_s"] - timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for runner_overhead.json")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tests"))
    from fakecuda import build_fake_driver
    work = Path(tempfile.mkdtemp(prefix="cubinrun-overhead-"))
    fake = build_fake_driver(work)
    environment = env(fake.path, work / "cache")
    sizes = [2 ** (10 + i) for i in range(args.runs)]
    axis = "N=[" + ",".join(map(str, sizes)) + "]"
    cli(environment, SPEC, "--set", "N=1024", *FAST)          # warm the launcher cache
    rows = []
    for round_ in range(args.rounds):
        one_wall, one_results = cli(environment, SPEC, "--axis", axis, *FAST)
        loop_wall, loop_results = 0.0, []
        for n in sizes:
            wall, results = cli(environment, SPEC, "--set", f"N={n}", *FAST)
            loop_wall += wall
            loop_results += results
        rows.append({"round": round_, "one_command_s": one_wall, "process_loop_s": loop_wall,
                     "one_command_run_ms": [own_cost_ms(r) for r in one_results],
                     "process_loop_run_ms": [own_cost_ms(r) for r in loop_results]})
        print(json.dumps({k: v for k, v in rows[-1].items() if k.endswith("_s")}), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "runner_overhead.json").write_text(json.dumps(
        {"runs": args.runs, "sizes": sizes, "rows": rows}, indent=2))

    one = statistics.median(r["one_command_s"] for r in rows)
    loop = statistics.median(r["process_loop_s"] for r in rows)
    per_run_one = statistics.median(v for r in rows for v in r["one_command_run_ms"][1:])
    first_one = statistics.median(r["one_command_run_ms"][0] for r in rows)
    per_run_loop = statistics.median(v for r in rows for v in r["process_loop_run_ms"])
    print(f"\nrunner overhead, fake driver, {args.runs} runs of the vector add "
          f"(N = 2^10..2^{9 + args.runs}), median of {args.rounds} rounds")
    print("mode                  | wall s | per run ms (beyond timing)")
    print(f"one command (worker)  | {one:6.2f} | first {first_one:6.1f}, then {per_run_one:6.1f}")
    print(f"one process per run   | {loop:6.2f} | {per_run_loop:6.1f} (+ process start each)")
    print(f"speed-up {loop / one:.2f}x")


if __name__ == "__main__":
    main()
