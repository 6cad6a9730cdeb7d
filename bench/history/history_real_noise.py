"""`history check` on real GPU noise: the same specs launched in N fresh
processes (identical code, so every change point is false), each process's
results added as one commit; then the same histories with a step injected
at a known commit (every time of the results from that commit on scaled by
the factor), which `history check` should find within one commit. This is
the synthetic bench (bench/history/history_detection.py) on the machine's own noise.

    python bench/history/history_real_noise.py [--processes 30] [--step 1.05] [--at 20]

On an H200, 30 processes of the 6 specs take about 2-3 minutes. Prints a
table per spec; with $OUT set, writes the results files and check's JSON there.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPECS = ["empty0.yaml", "vector_add.yaml", "triton_layer_norm.yaml", "triton_softmax.yaml",
         "work.yaml", "matmul_tiled.yaml"]
_TIMES = ("median_us", "min_us", "max_us", "mean_us", "p10_us", "p90_us", "std_us")


def cubinrun(*args, check=True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
    done = subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=900)
    if check and done.returncode not in (0, 5):
        raise RuntimeError(f"cubinrun {args[0]}: exit {done.returncode}: {done.stderr[-2000:]}")
    return done


def scaled(line: str, factor: float) -> str:
    result = json.loads(line)
    timing = result.get("timing") or {}
    for key in _TIMES:
        if timing.get(key) is not None:
            timing[key] *= factor
    for key in ("samples_us", "process_medians_us"):
        if timing.get(key):
            timing[key] = [v * factor for v in timing[key]]
    return json.dumps(result)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=30)
    parser.add_argument("--step", type=float, default=1.05)
    parser.add_argument("--at", type=int, default=20, help="the first commit of the step")
    args = parser.parse_args()
    folder = Path(os.environ.get("OUT") or tempfile.mkdtemp(prefix="cubinrun-history-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "history.sqlite"
    db.unlink(missing_ok=True)
    for commit in range(args.processes):
        path = folder / f"process{commit:03d}.jsonl"
        cubinrun("launch", *[REPO / "configs" / s for s in SPECS], "--jsonl", path)
        lines = path.read_text().splitlines()
        stepped = folder / f"stepped{commit:03d}.jsonl"
        stepped.write_text("\n".join(scaled(line, args.step) if commit >= args.at else line
                                     for line in lines) + "\n")
        date = f"2026-01-01T{commit // 60:02d}:{commit % 60:02d}:00Z"
        name = f"{commit:04d}" + "ab" * 18
        for branch, file in (("identical", path), ("stepped", stepped)):
            cubinrun("history", "add", file, "--db", db, "--commit", name, "--branch", branch,
                     "--date", date)
        print(f"process {commit + 1}/{args.processes}", file=sys.stderr)
    reports = {}
    for branch in ("identical", "stepped"):
        done = cubinrun("history", "check", "--db", db, "--branch", branch, "--since",
                        f"{0:04d}", "--json")
        reports[branch] = json.loads(done.stdout)
        (folder / f"check-{branch}.json").write_text(done.stdout)
    print(f"\n{args.processes} fresh processes, a {args.step - 1:+.0%} step at commit "
          f"{args.at} on the stepped branch\n")
    print("| series | spread of the process medians | false change points (identical) | "
          "step found at (stepped) |")
    print("| --- | --- | --- | --- |")
    stepped = {s["name"]: s for s in reports["stepped"]["series"]}
    for series in reports["identical"]["series"]:
        runs = [json.loads(line) for path in sorted(folder.glob("process*.jsonl"))
                for line in path.read_text().splitlines()]
        medians = [r["timing"]["median_us"] for r in runs if r.get("spec") == series["spec"]
                   and r.get("point", {}) == series["point"] and r.get("timing")]
        spread = (max(medians) - min(medians)) / sorted(medians)[len(medians) // 2]
        found = [int(c["commit"][:4]) for c in stepped[series["name"]]["changes"]]
        print(f"| {series['name']} | {spread:.2%} | {len(series['changes'])} | "
              f"{found or 'not found'} |")
    if not os.environ.get("OUT"):
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
