#!/usr/bin/env python3
"""Instructions per launch of the generated launcher, counted by callgrind.

Run on the CPU machine from the repository root (valgrind and a C compiler
needed, no GPU):

    python3 bench/launch/launch_instructions.py [--n 2000] [--out FILE.json]

Instruction counts are repeatable where wall time on a shared machine is not,
so this is the check that a change to template.c costs nothing per launch.
Against the fake libcuda (tests/fakecuda/fake_libcuda.c) it runs a Python
loop of `launch` calls for the signatures of bench/launch/launch_overhead.py
(`empty3`: *fp32, *fp32, i32; `empty16`: 16 mixed parameters), in two ways:
  same   the same argument objects every call (what a timing loop does; each
         slot's last converted value is reused)
  fresh  new int and float objects every call (each argument is converted;
         the pointers keep their addresses, as a tensor's buffer does); its
         loop count includes making those objects
Each case runs under `valgrind --tool=callgrind` with n and 2n launches, so
start-up, imports and the first launch (which opens the driver) cancel out:
  loop      (Ir(2n) - Ir(n)) / n for the whole process: the Python loop, the
            call and the launcher
  launch()  the same difference counted only inside the launcher's C
            `launch` function and what it calls (--toggle-collect=launch)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SIGNATURES = {
    "empty3": ["*fp32", "*fp32", "i32"],
    "empty16": ["*fp32", "*kfp32", "i32", "i64", "fp32", "fp64", "u8", "fp16", "*i32", "u32",
                "i1", "i16", "u64", "bf16", "i8", "*fp64"],
}
VALUES = {"empty3": [0x7F00_0000_0000, 0x7F00_0001_0000, 1024],
          "empty16": [0x7F00_0000_0000, 0x7F00_0001_0000, 1024, -5000000000, 0.5, 2.0, 255,
                      0.125, 0x7F00_0002_0000, 4294967295, 1, -3, 12345678901234567890, 1.5,
                      -7, 0x7F00_0003_0000]}
PARAM_SIZES = {"empty3": "8,8,4", "empty16": "8,8,4,8,4,8,1,2,8,4,1,2,8,2,1,8"}
CASES = [(kernel, mode) for kernel in SIGNATURES for mode in ("same", "fresh")]


def fresh_copy(value):
    """An equal object that is not `value` (for ints outside the small-int cache)."""
    return value + (0.0 if isinstance(value, float) else 0)


def worker(kernel: str, mode: str, n: int) -> None:
    """The measured process: n launches of one kernel's launcher."""
    from cubinrun.launcher import load_launcher
    module = load_launcher(SIGNATURES[kernel])
    config = module.Config(0x1234, (32,))
    values = VALUES[kernel]
    if mode == "same":
        calls = [tuple(values)] * n
    else:
        calls = [tuple(fresh_copy(v) for v in values) for _ in range(n)]
    launch = module.launch
    launch(config, 1, 1, 1, 0, *values)              # opens the driver: counted in both runs
    for args in calls:
        launch(config, 1, 1, 1, 0, *args)


def callgrind_ir(command: list[str], env: dict, toggle: str | None) -> int:
    """Total instructions callgrind counted for `command`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        options = ["--tool=callgrind", f"--callgrind-out-file={out}"]
        if toggle:
            options += ["--collect-atstart=no", f"--toggle-collect={toggle}"]
        subprocess.run(["valgrind", *options, *command], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        return int(totals.group(1))


def build_fake_driver(folder: Path) -> Path:
    """tests/fakecuda's fake libcuda, compiled into `folder`."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakecuda import build_fake_driver
    return build_fake_driver(folder).path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="launches in the shorter run")
    parser.add_argument("--out", type=Path, help="also write the numbers as JSON here")
    parser.add_argument("--worker", nargs=3, metavar=("KERNEL", "MODE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0
    if not shutil.which("valgrind"):
        print("valgrind not found", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CUBINRUN_LIBCUDA": str(build_fake_driver(Path(tmp))),
               "CUBINRUN_CACHE_DIR": str(Path(tmp) / "cache"), "PYTHONHASHSEED": "0",
               "PYTHONPATH": str(REPO)}
        results = []
        for kernel, mode in CASES:
            env["FAKECUDA_PARAM_SIZES"] = PARAM_SIZES[kernel]
            command = [sys.executable, str(Path(__file__).resolve()), "--worker", kernel, mode]
            subprocess.run([*command, "1"], env=env, check=True)   # build the launcher first
            row = {"kernel": kernel, "mode": mode}
            for label, toggle in (("loop", None), ("launch()", "launch")):
                short, long = (callgrind_ir([*command, str(k)], env, toggle)
                               for k in (args.n, 2 * args.n))
                row[label] = round((long - short) / args.n)
            results.append(row)
            print(f"{kernel:8} {mode:6} loop {row['loop']:6} Ir/launch   "
                  f"launch() {row['launch()']:6} Ir/launch", flush=True)
    if args.out:
        args.out.write_text(json.dumps({"n": args.n, "python": sys.version.split()[0],
                                        "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
