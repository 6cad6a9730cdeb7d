"""Is `--energy` repeatable, and why does the naive way scatter?

For the 2^28 fp32 vector add (configs/vector_add.yaml) and the Triton
tensor-core matmul (configs/triton_matmul.yaml), on the GPU machine:

- cubinrun: five `cubinrun launch --json --energy --no-bench` processes
  each; the coefficient of variation of energy.j_per_launch (goal <= 2%),
  the watts against the board's power limit (NVML, read only).
- naive (the 2^28 add only): in one process, five windows of ~1 s of
  back-to-back launches with NVML's counter read at the host's window edges
  (read, launch for 1 s, read): what an edge-unaware reading gives.
- the counter itself: how often it moves (median time between changes while
  polled), and the idle board's power over an edge-aligned window, so the
  share of idle power in J/launch is visible (cubinrun subtracts nothing).

    PYTHONPATH=. python3 bench/energy/energy.py [OUTDIR]

About 1.5 minutes. Writes OUTDIR/energy.json and the table to
OUTDIR/energy.txt (default $OUT, else bench/energy/results/). Needs nvidia-ml-py.
Nothing here sets a clock, a power limit or a mode.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "timing"))   # timing_fidelity

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"
CASES = {"vector add 2^28": (CONFIGS / "vector_add.yaml", {"N": str(2 ** 28)}),
         "triton matmul (tensor cores)": (CONFIGS / "triton_matmul.yaml", {})}
RUNS = 5


def child_env() -> dict[str, str]:
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def energy_run(spec: Path, overrides: dict[str, str]) -> dict:
    sets = [a for name, value in overrides.items() for a in ("--set", f"{name}={value}")]
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--json", "--energy",
                           "--no-bench", str(spec), *sets], capture_output=True, text=True,
                          cwd=REPO, env=child_env(), timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout)["energy"]


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values)


def in_process(spec: Path, overrides: dict[str, str]) -> dict:
    """The naive windows, the counter's update period and the idle power."""
    from cubinrun.gpu import driver, energy, nvml
    from cubinrun.gpu.timing import estimate_ms
    from cubinrun.pipeline.session import Session
    from timing_fidelity import ready_kernel
    device = driver.open_device(0)
    ready = ready_kernel(spec, overrides, Session(device))
    stream = driver.create_stream()
    handle = nvml.device(driver.device_uuid(device.handle))
    try:
        changes, last, since = [], nvml.energy_mj(handle), time.perf_counter()
        while time.perf_counter() - since < 1.0:          # idle: how often does it move?
            value = nvml.energy_mj(handle)
            if value != last:
                changes.append(time.perf_counter())
                last = value
        gaps = [b - a for a, b in zip(changes, changes[1:])]
        period = statistics.median(gaps) if gaps else float("nan")
        idle = energy.edge_window(lambda: nvml.energy_mj(handle), time.perf_counter,
                                  lambda: time.sleep(0.002), lambda: nvml.sm_clock_mhz(handle),
                                  1.0)
        per_chunk = max(1, int(energy.CHUNK_S * 1000 / estimate_ms(ready.launch, stream)))
        chunk, release, _ = energy.chunk_of(ready.launch, stream, per_chunk)
        naive = []
        for _ in range(RUNS):
            busy = energy.BackToBack(chunk, stream, per_chunk)
            warm_until = time.perf_counter() + energy.WARM_S
            while time.perf_counter() < warm_until:
                busy.keep_busy()
            start_mj, start = nvml.energy_mj(handle), time.perf_counter()
            while time.perf_counter() - start < 1.0:
                busy.keep_busy()
            end_mj, end = nvml.energy_mj(handle), time.perf_counter()
            watts = (end_mj - start_mj) / 1000 / (end - start)
            naive.append(watts * busy.launch_seconds())
        release()
        return {"counter_period_s": period, "idle_watts": idle.watts, "naive_j": naive}
    finally:
        ready.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT")
                       else Path(__file__).with_name("results"))
    out.mkdir(parents=True, exist_ok=True)
    from cubinrun.gpu import driver, nvml
    device = driver.get_device(0)
    limit = nvml.power_limit_w(nvml.device(driver.device_uuid(device.handle)))
    report: dict = {"device": device.name, "power_limit_w": limit, "cases": {}}
    for label, (spec, overrides) in CASES.items():
        runs = [energy_run(spec, overrides) for _ in range(RUNS)]
        report["cases"][label] = {"runs": runs}
        print(f"{label}: " + ", ".join(f"{r['j_per_launch']:.4g} J" for r in runs), flush=True)
        (out / "energy.json").write_text(json.dumps(report, indent=2))
    report["naive"] = in_process(*CASES["vector add 2^28"])
    (out / "energy.json").write_text(json.dumps(report, indent=2))

    lines = [f"{device.name}, power limit {limit:.0f} W; {RUNS} runs each, J per launch",
             "case                          | mean J     | CV     | watts    | SM MHz | "
             "launch us"]
    for label, case in report["cases"].items():
        runs = case["runs"]
        j = [r["j_per_launch"] for r in runs]
        lines.append(f"{label:29} | {statistics.fmean(j):10.4g} | {100 * cv(j):5.2f}% | "
                     f"{statistics.fmean(r['watts'] for r in runs):8.1f} | "
                     f"{statistics.fmean(r['sm_clock_mhz'] or 0 for r in runs):6.0f} | "
                     f"{statistics.fmean(r['launch_us'] for r in runs):.2f}")
    naive = report["naive"]
    lines += [f"naive windows, vector add 2^28: mean {statistics.fmean(naive['naive_j']):.4g} J, "
              f"CV {100 * cv(naive['naive_j']):.2f}% (cubinrun's goal <= 2%)",
              f"NVML energy counter: moves every {1000 * naive['counter_period_s']:.0f} ms "
              f"(median, idle); idle board {naive['idle_watts']:.1f} W"]
    text = "\n".join(lines)
    (out / "energy.txt").write_text(text + "\n")
    print("\n" + text)


if __name__ == "__main__":
    main()
