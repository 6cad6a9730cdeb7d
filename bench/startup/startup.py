"""Wall time of cubinrun commands, started fresh each time, with a warm cache.

Commands: `--help`, `gen`, `launch --dry-run --json`, `launch --dry-run`
(the table), and where a GPU answers, `launch --no-bench` next to the floor
it cannot beat: a Python that imports cuda.bindings, creates a context on
device 0 and loads the same cubin. Each is run once to warm the caches, then
`--runs` times interleaved; the table gives median and min in ms. Bytecode
is cached in a private folder, as it would be after a pip install.

Run from the repo root: `python3 bench/startup/startup.py` (CPU or GPU machine).
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
SPEC = "configs/vector_add.yaml"

CUDA_FLOOR = """
from cuda.bindings import driver as cu
assert cu.cuInit(0)[0] == 0
err, dev = cu.cuDeviceGet(0)
err, ctx = cu.cuDevicePrimaryCtxRetain(dev)
cu.cuCtxSetCurrent(ctx)
data = open("kernels/build/vector_add.sm_90.cubin", "rb").read()
err, mod = cu.cuModuleLoadData(data)
assert err == 0, err
"""


def command_lines(gpu: bool) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "cubinrun"]
    lines = {
        "cubinrun --help": [*cli, "--help"],
        "cubinrun gen": [*cli, "gen", SPEC],
        "cubinrun launch --dry-run --json": [*cli, "launch", "--dry-run", "--json", SPEC],
        "cubinrun launch --dry-run": [*cli, "launch", "--dry-run", SPEC],
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    if gpu:
        lines["cubinrun launch --no-bench"] = [*cli, "launch", "--no-bench", SPEC]
        lines["floor: cuInit + context + cuModuleLoadData"] = [sys.executable, "-c", CUDA_FLOOR]
    return lines


def has_gpu() -> bool:
    probe = subprocess.run([sys.executable, "-c", CUDA_FLOOR], cwd=REPO, capture_output=True)
    return probe.returncode == 0


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed = 1000 * (time.perf_counter() - start)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-300:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    # Bytecode cached as after a pip install, even where the tree is read-only or
    # PYTHONDONTWRITEBYTECODE is set (the GPU machine recompiles every module otherwise).
    env = {**os.environ, "NO_COLOR": "1",
           "PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="cubinrun-pycache-")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    lines = command_lines(has_gpu())
    for argv in lines.values():
        wall_ms(argv, env)                                   # warm the caches
    times: dict[str, list[float]] = {name: [] for name in lines}
    for _ in range(args.runs):
        for name, argv in lines.items():
            times[name].append(wall_ms(argv, env))
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).with_name("results")
    out.mkdir(parents=True, exist_ok=True)
    (out / "startup.json").write_text(json.dumps(times, indent=2))
    print(f"\nstart-up, {args.runs} runs each, warm caches, ms")
    print(f"{'command':45} {'median':>8} {'min':>8}")
    for name, values in times.items():
        print(f"{name:45} {statistics.median(values):8.1f} {min(values):8.1f}")


if __name__ == "__main__":
    main()
