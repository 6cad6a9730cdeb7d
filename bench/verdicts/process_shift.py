"""Does a small kernel's median move from one process to the next, and does
where the process runs (which NUMA node's cores, and so which node's memory
the driver's command buffers land in) explain it?

Runs `cubinrun launch --json` on a few short kernels in many processes, in
turn unpinned and pinned to each NUMA node's cores (os.sched_setaffinity in
the child before it starts; first-touch then puts its memory there), and
prints each process's medians and event offset, then the spread per
placement. Two H200 runs saw the same kernels move together by up to
0.16 us between processes (bench/README.md, noise table).

    PYTHONPATH=. python3 bench/verdicts/process_shift.py OUTDIR [--rounds 4]

`--in-process` asks the same inside one process instead: the empty kernel's
raw event-pair median and calibrated offset on several fresh streams, then
with several fresh copies of the timing kernels' module. A spread like the
processes' one points at what each process happens to get. `--placements`:
kernels whose medians took one of two levels per process, each timed (one
stream, one event offset) with several sets of buffers alive at once in one
session, then each in a session of its own (its own module too).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH / "scale"), str(BENCH / "timing")]   # suite, timing_fidelity
from suite import child_env  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SPECS = [REPO / "configs" / name for name in ("empty0.yaml", "scalars.yaml", "vector_add.yaml")]


def numa_nodes() -> dict[str, set[int]]:
    """Each NUMA node's CPUs that this process may use."""
    allowed = os.sched_getaffinity(0)
    nodes = {}
    for node in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        cpus = set()
        for part in (node / "cpulist").read_text().strip().split(","):
            if part:
                lo, _, hi = part.partition("-")
                cpus.update(range(int(lo), int(hi or lo) + 1))
        if cpus & allowed:
            nodes[node.name] = cpus & allowed
    return nodes


def gpu_node() -> str:
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().splitlines()[0]
        domain, rest = bus.lower().split(":", 1)
        path = Path("/sys/bus/pci/devices") / f"{domain[-4:]}:{rest}" / "numa_node"
        return f"{bus}: numa_node {path.read_text().strip()}"
    except Exception as exc:            # noqa: BLE001 - a report line
        return f"unknown ({exc})"


def one(cpus: set[int] | None) -> dict:
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--json", *map(str, SPECS),
                           "--rep", "100"], capture_output=True, text=True, cwd=REPO,
                          env=child_env(),
                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
                          timeout=300)
    results = json.loads(proc.stdout).get("results", [])
    timings = [r.get("timing") or {} for r in results]
    return {"medians": [t.get("median_us") for t in timings],
            "offset": next((t["event_offset_us"] for t in timings if t.get("event_offset_us")),
                           None)}


def in_process(out: Path, copies: int) -> None:
    from timing_fidelity import EMPTY, InProcess
    from cubinrun.gpu import driver
    from cubinrun.gpu.timers import time_kernel
    from cubinrun.gpu.timing import TimingKernels, TimingOptions, event_calibration
    proc = InProcess(EMPTY, None)
    options = TimingOptions(warmup_ms=25, rep_ms=100, l2="hot", raw_events=True)

    def measure(stream: int, kernels) -> dict:
        timed = time_kernel(proc.ready.launch, stream, kernels, options)
        offset, slope = event_calibration(stream, kernels)
        return {"raw_median": statistics.median(timed.samples_us), "offset": offset,
                "slope": slope}
    report: dict[str, list[dict]] = {"streams": [], "modules": []}
    kernels = TimingKernels(proc.device)
    for _ in range(copies):                     # one module, fresh streams
        report["streams"].append(measure(driver.create_stream(), kernels))
    for _ in range(copies):                     # one stream, fresh modules
        fresh = TimingKernels(proc.device)
        report["modules"].append(measure(proc.stream, fresh))
    (out / "process_shift_in_process.json").write_text(json.dumps(report, indent=2))
    for what, rows in report.items():
        print(f"{what:8s} raw median " + " ".join(f"{r['raw_median']:.3f}" for r in rows)
              + " | offset " + " ".join(f"{r['offset']:.3f}" for r in rows)
              + " | slope " + " ".join(f"{r['slope']:.3f}" for r in rows))


PLACED = ("triton_softmax.yaml", "triton_layer_norm.yaml", "conv1d_constant.yaml",
          "triton_tma_copy.yaml", "empty0.yaml", "vector_add.yaml")


def by_placement(out: Path, copies: int) -> None:
    from timing_fidelity import ready_kernel
    from cubinrun.gpu import driver
    from cubinrun.gpu.timers import time_kernel
    from cubinrun.gpu.timing import TimingKernels, TimingOptions
    from cubinrun.pipeline.session import Session
    device = driver.open_device(0)
    stream, kernels = driver.create_stream(), TimingKernels(device)
    options = TimingOptions(warmup_ms=25, rep_ms=100, l2="cold")

    def median(ready) -> float:
        return statistics.median(time_kernel(ready.launch, stream, kernels, options).samples_us)
    report: dict[str, dict[str, list[float]]] = {}
    for name in PLACED:
        spec = REPO / "configs" / name
        shared = Session(device)
        buffers = [ready_kernel(spec, {}, shared) for _ in range(copies)]   # all alive
        own = [ready_kernel(spec, {}, Session(device)) for _ in range(copies)]
        report[name] = {"buffers": [median(r) for r in buffers],
                        "sessions": [median(r) for r in own]}
        print(f"{name[:22]:22s} buffers " + " ".join(f"{m:.3f}" for m in report[name]["buffers"])
              + " | sessions " + " ".join(f"{m:.3f}" for m in report[name]["sessions"]),
              flush=True)
    (out / "process_shift_placements.json").write_text(json.dumps(report, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--placements", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.in_process:
        return in_process(args.out, 6)
    if args.placements:
        return by_placement(args.out, 6)
    nodes = numa_nodes()
    print(f"GPU {gpu_node()}; nodes: " + ", ".join(f"{n} {len(c)} cpus" for n, c in nodes.items()))
    placements = {"unpinned": None, **nodes}
    runs: dict[str, list[dict]] = {name: [] for name in placements}
    one(None)                                   # warm the caches
    for round_ in range(args.rounds):
        for name, cpus in placements.items():
            run = one(cpus)
            runs[name].append(run)
            print(f"round {round_} {name:9s} offset {run['offset']:.3f} medians "
                  + " ".join(f"{m:.3f}" for m in run["medians"]), flush=True)
    (args.out / "process_shift.json").write_text(json.dumps(runs, indent=2))
    print("\nplacement | spread (max-min) of each spec's median over processes, us | offsets")
    for name, rs in runs.items():
        spreads = [max(r["medians"][i] for r in rs) - min(r["medians"][i] for r in rs)
                   for i in range(len(SPECS))]
        means = [statistics.mean(r["medians"][i] for r in rs) for i in range(len(SPECS))]
        print(f"{name:9s} | " + " ".join(f"{s:.3f}" for s in spreads) + " | means "
              + " ".join(f"{m:.3f}" for m in means) + " | "
              + " ".join(f"{r['offset']:.3f}" for r in rs))


if __name__ == "__main__":
    main()
