"""Data at scale: `cubinrun launch SPEC --set N=2^k --no-bench` for growing N,
each in a fresh process: wall time, peak host RSS and the time per stage, for
the device path (data drawn and checked on the GPU) and, in the same run, the
host path (CUBINRUN_DATA=host) side by side.

The stages come from the report's `stages_s` (init: making the inputs, upload,
launch, download, check; see run.STAGES), the peak RSS from the child's
rusage, the data size from `launch --dry-run --json` (the buffers' bytes). One
warm-up run at the smallest size fills the caches first.

Run from the repo root on the GPU machine:

    PYTHONPATH=. python3 bench/data/data_scale.py                  # 2^20, 2^24, 2^28, 2^30
    PYTHONPATH=. python3 bench/data/data_scale.py --sizes 24,28 --repeat 3   # what --repeat costs

`--fake` runs the same path on a CPU with the test suite's fake driver (device
memory is host memory, so the RSS includes the device's copy of the buffers;
the kernel is emulated as out = x + y, so it fits configs/vector_add.yaml only).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = "configs/vector_add.yaml"
STAGES = ("init", "upload", "launch", "download", "check")
GOALS = {30: (3.0, None), 28: (1.5, None)}       # log2 N: (wall s, peak RSS / data), device path
RSS_GOAL = 0.5 * 2**30                              # peak host RSS of the device path


def run_one(spec: str, n: int, fake: bool, extra: list[str], where: str = "device") -> dict:
    if fake:
        argv = [sys.executable, __file__, "--child-fake", spec, str(n), *extra]
    else:
        argv = [sys.executable, "-m", "cubinrun", "launch", spec, "--set", f"N={n}",
                "--no-bench", "--json", *extra]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        env = {**os.environ, "CUBINRUN_DATA": where}
        proc = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)        # this child's own peak RSS
        wall = time.perf_counter() - began
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if code not in (0, 1):
            raise RuntimeError(f"N={n}: exit {code}: {err.read().decode()[-500:]}")
        report = json.loads(out.read())
    return {"n": n, "exit": code, "wall_s": wall, "peak_rss": usage.ru_maxrss * 1024,
            "stages_s": report.get("stages_s", {}), "passed": report["check"]["passed"],
            "device": report["device"]["name"]}


def data_bytes(spec: str, n: int) -> int:
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--dry-run", "--json",
                           spec, "--set", f"N={n}"], cwd=REPO, capture_output=True, check=True)
    return sum(b["bytes"] for b in json.loads(proc.stdout)["buffers"])


def child_fake(spec: str, n: int, extra: list[str]) -> None:
    """The launch on the fake driver, in this process (see the module docstring)."""
    import ctypes

    import numpy as np
    sys.path.insert(0, str(REPO / "tests"))
    from fakecuda import fake_driver_env
    from fakecuda.device import FakeDevice
    from support.fakes import VECTOR_ADD_PARAMS

    from cubinrun.gpu import driver
    from cubinrun.cli import main
    with fake_driver_env(Path(tempfile.mkdtemp(prefix="cubinrun-fake-"))) as fake:
        fake.set_param_sizes(VECTOR_ADD_PARAMS)
        device = FakeDevice(lambda: fake.launch_count)
        done = [0]

        def synchronize(stream):               # the kernel "runs" when it is waited for
            if fake.launch_count > done[0]:
                done[0] = fake.launch_count
                params = fake.launches()[-1].params
                x, y, out = (int.from_bytes(p, "little") for p in params[:3])
                count = int.from_bytes(params[3][:4], "little")
                view = lambda a: np.ctypeslib.as_array((ctypes.c_float * count).from_address(a))
                np.add(view(x), view(y), out=view(out))
        device.cuStreamSynchronize = synchronize
        driver.call = device
        main(["launch", spec, "--set", f"N={n}", "--no-bench", "--json", *extra])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20,24,28,30", help="log2 of N, comma-separated")
    parser.add_argument("--spec", default=SPEC)
    parser.add_argument("--fake", action="store_true", help="CPU only, with the fake driver")
    parser.add_argument("--threads", type=int, help="worker threads (CUBINRUN_THREADS)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="launch --repeat N: every run's inputs made again and compared")
    parser.add_argument("--child-fake", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_fake:
        spec, n, *extra = args.child_fake
        return child_fake(spec, int(n), extra)
    if args.threads:
        os.environ["CUBINRUN_THREADS"] = str(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    extra = ["--repeat", str(args.repeat)] if args.repeat > 1 else []
    run_one(args.spec, 1 << min(sizes), args.fake, extra)          # warm the caches
    rows = []
    for k in sizes:
        size = data_bytes(args.spec, 1 << k)
        for where in ("device", "host"):        # the data's path, side by side (CUBINRUN_DATA)
            row = run_one(args.spec, 1 << k, args.fake, extra, where)
            row["log2_n"], row["data_bytes"], row["data"] = k, size, where
            rows.append(row)
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).with_name("results")
    out.mkdir(parents=True, exist_ok=True)
    name = ("data_scale_fake" if args.fake else "data_scale") + \
        (f"_repeat{args.repeat}" if args.repeat > 1 else "") + ".json"
    (out / name).write_text(json.dumps(rows, indent=2))
    print_table(rows, args.fake, args.repeat)


def print_table(rows: list[dict], fake: bool, repeat: int) -> None:
    print(f"\n{rows[0]['device']}, stages in seconds")
    print(f"{'N':>5} {'data':>9} {'path':>6} {'wall s':>7} {'peak RSS':>9} {'RSS/data':>8} "
          + " ".join(f"{s:>8}" for s in STAGES) + "  result")
    for r in rows:
        # the fake's device memory is host memory: the buffers, and run 1's copy for --repeat
        rss = r["peak_rss"] - (r["data_bytes"] * (2 if repeat > 1 else 1) if fake else 0)
        stages = " ".join(f"{r['stages_s'].get(s, float('nan')):8.3f}" for s in STAGES)
        print(f"2^{r['log2_n']:<3} {r['data_bytes'] / 2**30:6.3f} GiB {r['data']:>6} {r['wall_s']:7.2f} "
              f"{rss / 2**30:5.2f} GiB {rss / r['data_bytes']:8.2f} {stages}  "
              f"{'pass' if r['passed'] else 'FAIL'}")
    if repeat > 1:
        print(f"(--repeat {repeat}: wall time and RSS of all the runs; stages are run 1's)")
    if fake:
        print("(fake driver: the RSS column leaves out the fake device's copy of the buffers)")
    if fake or repeat > 1:
        return                              # the goals are the GPU machine's, for one launch
    for k, (wall, ratio) in GOALS.items():
        for r in rows:
            if r["log2_n"] == k and r["data"] == "device":
                rss = r["peak_rss"] / r["data_bytes"]
                ok = (r["wall_s"] <= wall and (ratio is None or rss <= ratio)
                      and r["peak_rss"] <= RSS_GOAL)
                print(f"goal 2^{k}: wall <= {wall:g} s, peak RSS <= 0.5 GiB (device path): "
                      f"{'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
