"""A 14-point sweep on 1 worker against W workers (`--devices`), and on Ray
actors against local workers on the same hardware (`--ray`).

Each mode is one `cubinrun launch --json` process over the fp32 vector add
swept over `--axis` (14 points by default); its wall time, start to exit, is
the cost a user sees. Rounds interleave the modes; the table gives medians.

- 1 worker: `--devices 0`.
- W workers: `--devices all` on a machine with several GPUs (the 2-GPU ratio:
  goal >= 1.8x); with one GPU, `--devices 0,0` (two workers sharing it).
- Ray, same layout: `--ray ADDRESS` on a cluster this script starts once
  (`ray.init`, this machine's GPUs), with `--workers-per-gpu 2` where the
  local row shares one GPU (goal: within 15% of the local row); and `--ray`
  alone, which starts and stops a local cluster inside the command.

Every mode must give the same check results per point as the first (the
table says so). With `--fake` it runs on the CPU against the fake driver
(tests/fakecuda) with W fake GPUs: no kernel runs, so the work is host-side
(spec, data, launcher, check and the timing loop's own host work).

    PYTHONPATH=. python3 bench/scale/scale.py OUTDIR [--rounds 3] [--fake [--workers 2]]
        [--axis 'N[pow2]=[12:25]']

Prints a compact table last and writes OUTDIR/scale.json (kept as it goes).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "configs" / "vector_add.yaml"
# The CLI with the fake driver installed in the launch process and in every worker.
FAKE_CLI = ("import sys; import fakecuda.worker as w; w.install(); "
            "import cubinrun.runs.executor as e; e.WORKER_SETUP = 'fakecuda.worker:install'; "
            "from cubinrun.cli import main; main(sys.argv[1:])")


def setup_fake(workers: int) -> None:
    """This process's environment, inherited by every command and by the Ray cluster."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakecuda import build_fake_driver
    work = Path(tempfile.mkdtemp(prefix="cubinrun-scale-"))
    fake = build_fake_driver(work)
    os.environ.update({"CUBINRUN_LIBCUDA": str(fake.path), "CUBINRUN_CACHE_DIR": str(work / "c"),
                       "FAKECUDA_DEVICES": str(workers),
                       "RAY_memory_monitor_refresh_ms": "0"})


def python_path() -> None:
    paths = [str(REPO / "tests"), str(REPO),
             *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


def gpu_count(fake: bool) -> int:
    if fake:
        return int(os.environ["FAKECUDA_DEVICES"])
    from cubinrun.runs.devices import enumerate_devices
    return len(enumerate_devices())


def launch(fake: bool, *args) -> dict:
    command = [sys.executable, "-c", FAKE_CLI] if fake else [sys.executable, "-m", "cubinrun"]
    started = time.perf_counter()
    proc = subprocess.run([*command, "launch", "--json", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=900)
    wall = time.perf_counter() - started
    try:
        results = json.loads(proc.stdout)["results"]
    except (json.JSONDecodeError, KeyError):
        raise RuntimeError(f"exit {proc.returncode}: {proc.stderr[-3000:]}") from None
    return {"wall_s": wall, "exit_code": proc.returncode,
            "checks": [[r["point"], r["exit_code"], (r.get("check") or {}).get("passed")]
                       for r in results],
            "run_wall_s": [r["wall_s"] for r in results],
            "devices": sorted({f"{r['device'].get('host')}:{r['device'].get('ordinal')}"
                               for r in results if r.get("device")}),
            "stderr": proc.stderr[-500:] if proc.returncode not in (0, 1) else ""}


def modes(gpus: int, address: str) -> list[tuple[str, list[str]]]:
    """(label, launch flags); the first is the 1-worker base, the second the W-worker row."""
    if gpus >= 2:
        many, share, label = ["--devices", "all"], [], f"{gpus} workers, {gpus} GPUs"
    else:
        many, share, label = ["--devices", "0,0"], ["--workers-per-gpu", "2"], \
            "2 workers, 1 GPU"
    rows = [("1 worker: --devices 0", ["--devices", "0"]),
            (f"{label}: {' '.join(many)}", many)]
    if gpus == 1:
        rows.append(("1 worker: --ray ADDRESS", ["--ray", address]))
    rows.append((f"{label}: --ray ADDRESS {' '.join(share)}".rstrip(),
                 ["--ray", address, *share]))
    rows.append((f"{label}: --ray {' '.join(share)} (starts Ray)".replace("  ", " "),
                 ["--ray", *share]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder for scale.json")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fake", action="store_true", help="the CPU and the fake driver")
    parser.add_argument("--workers", type=int, default=2, help="with --fake: fake GPUs")
    parser.add_argument("--axis", default="N[pow2]=[12:25]", help="the sweep (14 points)")
    parser.add_argument("--extra", default="", help="more launch flags, e.g. '--rep 50'")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.fake:
        setup_fake(args.workers)
    python_path()
    gpus = gpu_count(args.fake)

    import logging

    import ray
    ray.init(num_gpus=gpus, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)
    address = ray.get_runtime_context().gcs_address
    sweep = [SPEC, "--axis", args.axis, *args.extra.split()]
    rows = modes(gpus, address)
    report = {"host": socket.gethostname(), "python": platform.python_version(),
              "fake": args.fake, "gpus": gpus, "ray": ray.__version__, "axis": args.axis,
              "extra": args.extra, "modes": [name for name, _ in rows], "rounds": []}
    save = lambda: (args.out / "scale.json").write_text(json.dumps(report, indent=2))  # noqa

    try:
        launch(args.fake, *sweep, "--devices", "0", "--no-bench")    # warm the caches
        for round_ in range(args.rounds):
            order = rows if round_ % 2 == 0 else rows[::-1]
            measured = {name: launch(args.fake, *sweep, *flags) for name, flags in order}
            report["rounds"].append(measured)
            print(f"round {round_}: " + ", ".join(f"{m['wall_s']:.2f}"
                                                  for m in (measured[n] for n, _ in rows)),
                  flush=True)
            save()
    finally:
        ray.shutdown()
    table(report, rows)


def table(report: dict, rows) -> None:
    rounds = report["rounds"]
    points = len(rounds[0][rows[0][0]]["checks"])
    base = rounds[0][rows[0][0]]["checks"]
    wall = {name: statistics.median(r[name]["wall_s"] for r in rounds) for name, _ in rows}
    one, many = wall[rows[0][0]], wall[rows[1][0]]
    kind = "fake driver, CPU" if report["fake"] else f"{report['gpus']} GPU(s)"
    print(f"\n{points}-point sweep ({report['axis']}), {kind}, {report['host']}, Python "
          f"{report['python']}, Ray {report['ray']}; medians of {len(rounds)} rounds")
    print(f"{'mode':52} | wall s | runs/s | vs 1 worker | vs local | same checks")
    for name, flags in rows:
        local = one if name.startswith("1 worker") else many    # the same layout, locally
        same = all(r[name]["checks"] == base for r in rounds)
        vs_local = f"{wall[name] / local:8.2f}x" if "--ray" in flags else " " * 9
        print(f"{name:52} | {wall[name]:6.2f} | {points / wall[name]:6.2f} | "
              f"{one / wall[name]:10.2f}x | {vs_local} | {'yes' if same else 'NO'}")
    print(f"W workers against 1: {one / many:.2f}x the throughput"
          + (" (goal >= 1.8x on two GPUs)" if report["gpus"] >= 2 and not report["fake"]
             else ""))


if __name__ == "__main__":
    main()
