#!/usr/bin/env python3
"""Launch overhead: host time per launch of an empty kernel, path by path.

Run on a GPU machine from the repository root (no install needed):

    PYTHONPATH=. python bench/launch/launch_overhead.py            # full run
    PYTHONPATH=. python bench/launch/launch_overhead.py --quick    # smoke run

For kernels/empty.cu's `empty3` (3 parameters) and `empty16` (16 mixed
parameters) it times loops of back-to-back launches, each loop ended by one
stream synchronise, and reports the median over rounds of loop time / n, in
microseconds and as a ratio to the C floor measured in the same run. Every
round runs every (kernel, path) pair once, in a shuffled order, so drift
(clocks, other tenants) spreads over all paths alike.

All paths launch on one non-blocking stream in the primary context of the
device, with the same buffers and the same scalar values:
  floor            C: fill a CUlaunchConfig, copy the arguments into their
                   storage, cuLaunchKernelEx (bench/launch/launch_overhead_floor.c,
                   built here with the C compiler). One ctypes call per loop;
                   the time is taken in C with CLOCK_MONOTONIC.
  cubinrun.launch_n  one call that converts the arguments once and launches n
                   times in C (cubinrun's batched entry point).
  cubinrun.launch  cubinrun's generated launcher, one call per launch.
  cuda.bindings    cuLaunchKernel with kernelParams as ((values), (ctypes types)).
  cuda.core        launch(stream, LaunchConfig, Kernel, *args); NumPy scalars.
  cupy             RawModule(path=cubin).get_function(name)(grid, block, args).
  triton           Triton's own launcher, called as CompiledKernel.run is called
                   by JITFunction.run: CudaLauncher.__call__ and its C launch(),
                   for a Triton-compiled empty kernel of the same signature (it
                   has Triton's two trailing scratch pointers too). The JIT's
                   argument binding and cache lookup are not timed. A negative
                   i8 goes as its two's-complement byte: Triton's launcher
                   refuses negative i8 values.
  torch            x.add_(1.0) on a one-element CUDA tensor: an eager op, for
                   scale; it is not the empty kernel.
A path whose library is missing or fails is reported with its error; the
others go on. Exit status 1 when the device cannot be set up or the floor or a
cubinrun path has no numbers, else 0. --timeout (540 s) dumps the stacks and
exits rather than hang.

Results: a table last on stdout, and the full record as JSON in
$OUT/launch_overhead.json when OUT is set, else results/launch_overhead.json
beside this file.

This file measures and reports; beside it, launch_overhead_cases.py holds the
kernels, their argument values and what a path provides, launch_overhead_floor.py
builds and drives the C floor, and launch_overhead_paths.py sets up the Python
paths.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import faulthandler
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parents[1]
if str(REPO) not in sys.path:  # `python bench/launch/launch_overhead.py` works without PYTHONPATH too
    sys.path.insert(0, str(REPO))

# The cases and the paths are the modules beside this one (the script's folder
# is first on sys.path).
from launch_overhead_cases import BLOCK, BUFFERS, CUBIN, EMPTY3, EMPTY16, KERNELS, Env, \
    KernelCase, LaunchPath, Runner, buffer_nbytes, log  # noqa: E402
from launch_overhead_floor import compiler_command  # noqa: E402
from launch_overhead_paths import PATHS, REQUIRED  # noqa: E402

# --- measuring -------------------------------------------------------------------


@dataclass
class Result:
    path: LaunchPath
    runners: dict[str, Runner] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)   # kernel name -> why it has no numbers
    samples_us: dict[str, list[float]] = field(default_factory=dict)  # per launch, per round
    wall_us: dict[str, list[float]] = field(default_factory=dict)     # as seen from Python

    @property
    def status(self) -> str:
        """ok (every kernel measured), partial, or failed (no numbers)."""
        if not self.samples_us:
            return "failed"
        return "partial" if self.errors else "ok"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def time_loop(runner: Runner, n: int, sync: Callable[[], None]) -> tuple[float, float]:
    """(us per launch, us per launch seen from Python) for one loop of n launches."""
    with runner.scope():
        gc.disable()
        try:
            start = time.perf_counter_ns()
            result = runner.loop(n)
            sync()
            wall = (time.perf_counter_ns() - start) / 1e3 / n
        finally:
            gc.enable()
    runner.check(result)
    return (result * 1e6 / n if runner.self_timed else wall), wall



def open_env() -> Env:
    from cubinrun.gpu import driver
    if not CUBIN.is_file():
        raise FileNotFoundError(f"{CUBIN} is missing (kernels/build.sh builds it)")
    device = driver.open_device(0)
    cubin = CUBIN.read_bytes()
    module = driver.load_module(cubin, what=str(CUBIN.name))
    functions = {case.name: driver.get_function(module, case.name) for case in KERNELS}
    buffers = {name: driver.alloc(buffer_nbytes(name)) for name in BUFFERS}
    stream = driver.create_stream()
    return Env(device, stream, buffers, cubin, functions,
               sync=lambda: driver.stream_synchronize(stream))


def set_up(paths: list[LaunchPath], env: Env) -> list[Result]:
    """A Result per path; a missing or broken library is reported and the others go on."""
    results = []
    for path in paths:
        result = Result(path)
        results.append(result)
        try:
            make = path.setup(env)
        except Exception as exc:
            result.errors = {case.name: one_line(exc) for case in KERNELS}
            log(f"  skip   {path.key}: {one_line(exc)}")
            continue
        for case in KERNELS:
            try:
                result.runners[case.name] = make(case)
            except Exception as exc:
                result.errors[case.name] = one_line(exc)
                log(f"  skip   {path.key} {case.name}: {one_line(exc)}")
        if result.runners:
            log(f"  ready  {path.key} ({', '.join(result.runners)})")
    return results


def fail(result: Result, case: KernelCase, exc: BaseException) -> None:
    """Drop the kernel from this path, numbers included: they would be from fewer rounds."""
    result.errors[case.name] = one_line(exc)
    result.runners.pop(case.name, None)
    result.samples_us.pop(case.name, None)
    result.wall_us.pop(case.name, None)
    log(f"  FAILED {result.path.key} {case.name}: {one_line(exc)}")


def warm_up(results: list[Result], env: Env, n: int) -> None:
    for result in results:
        for case in KERNELS:
            runner = result.runners.get(case.name)
            if runner is None:
                continue
            try:
                for _ in range(2):
                    time_loop(runner, n, env.sync)
            except Exception as exc:
                fail(result, case, exc)


def measure(results: list[Result], env: Env, rounds: int, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for r in range(rounds):
        started = time.perf_counter()
        order = [(result, case) for result in results for case in KERNELS
                 if case.name in result.runners]
        rng.shuffle(order)
        for result, case in order:
            runner = result.runners.get(case.name)
            if runner is None:  # failed earlier in this round
                continue
            try:
                per_launch_us, wall_us = time_loop(runner, n, env.sync)
            except Exception as exc:
                fail(result, case, exc)
                continue
            result.samples_us.setdefault(case.name, []).append(per_launch_us)
            result.wall_us.setdefault(case.name, []).append(wall_us)
        log(f"  round {r + 1}/{rounds} done in {time.perf_counter() - started:.2f} s")


# --- reporting -------------------------------------------------------------------


def medians(results: list[Result]) -> dict[str, dict[str, float]]:
    return {result.path.key: {name: statistics.median(samples)
                              for name, samples in result.samples_us.items()}
            for result in results}


def versions() -> dict[str, str]:
    from importlib import metadata
    found = {"python": platform.python_version()}
    for dist in ("cuda-bindings", "cuda-core", "cupy-cuda13x", "cupy-cuda12x", "cupy", "torch",
                 "triton", "numpy"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    with contextlib.suppress(Exception):
        compiler = compiler_command()
        done = subprocess.run([*compiler, "--version"], capture_output=True, text=True, timeout=10)
        found["cc"] = done.stdout.splitlines()[0] if done.stdout else compiler[0]
    return found


def driver_version() -> str:
    with contextlib.suppress(Exception):
        from cubinrun.gpu import driver
        v = driver.driver_version()
        return f"{v // 1000}.{v % 1000 // 10}"
    return "unknown"


def record(results: list[Result], env: Env, args, started: str) -> dict:
    table = medians(results)
    floor = table.get("floor", {})
    paths = []
    for result in results:
        kernels = {}
        for case in KERNELS:
            samples = result.samples_us.get(case.name)
            if not samples:
                continue
            median = statistics.median(samples)
            kernels[case.name] = {
                "median_us": median, "min_us": min(samples), "max_us": max(samples),
                "ratio_to_floor": median / floor[case.name] if case.name in floor else None,
                "median_wall_us": statistics.median(result.wall_us[case.name]),
                "samples_us": samples,
            }
        paths.append({"key": result.path.key, "label": result.path.label,
                      "what": result.path.what, "status": result.status, "errors": result.errors, "kernels": kernels})
    return {
        "benchmark": "launch_overhead",
        "date": started,
        "host": platform.node(),
        "gpu": env.device.name,
        "driver": driver_version(),
        "versions": versions(),
        "rounds": args.rounds,
        "launches_per_loop": args.launches,
        "seed": args.seed,
        "block": [BLOCK, 1, 1],
        "grid": [1, 1, 1],
        "kernels": {case.name: [f"{p.name}: {p.type} = {p.value}" for p in case.params]
                    for case in KERNELS},
        "paths": paths,
    }


def format_table(doc: dict) -> str:
    by_key = {p["key"]: p for p in doc["paths"]}

    def cells(path: dict, case: KernelCase) -> tuple[str, str]:
        k = path["kernels"].get(case.name)
        if k is None:
            return "-", "-"
        ratio = k["ratio_to_floor"]
        return f"{k['median_us']:.2f}", ("-" if ratio is None else f"{ratio:.2f}")

    width = max(len(p.label) for p in PATHS)
    versions_text = ", ".join(f"{k} {v}" for k, v in doc["versions"].items())
    lines = [
        f"launch overhead: median host time per launch over {doc['rounds']} rounds of "
        f"{doc['launches_per_loop']} launches; ratio: to the C floor of this run",
        f"{doc['date']}  {doc['gpu']}  driver {doc['driver']}",
        versions_text,
        f"{'path':<{width}} | 3 params us | ratio | 16 params us | ratio",
        f"{'-' * width}-|-------------|-------|--------------|------",
    ]
    notes = []
    for path in PATHS:
        entry = by_key.get(path.key)
        if entry is None:
            continue
        if not entry["kernels"]:
            first_error = next(iter(entry["errors"].values()), "no numbers")
            lines.append(f"{path.label:<{width}} | not run: {first_error[:72]}")
            continue
        us3, r3 = cells(entry, EMPTY3)
        us16, r16 = cells(entry, EMPTY16)
        lines.append(f"{path.label:<{width}} | {us3:>11} | {r3:>5} | {us16:>12} | {r16:>5}")
        notes += [f"  {path.key} {name}: {error}" for name, error in entry["errors"].items()]
    if notes:
        lines += ["not measured:", *notes]
    return "\n".join(lines)


def json_path(explicit: str | None) -> Path:
    if explicit:
        return Path(explicit)
    if out := os.environ.get("OUT"):
        return Path(out) / "launch_overhead.json"
    return BENCH / "results" / "launch_overhead.json"


# --- main ---------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Host time per launch of an empty kernel (3 and 16 parameters) through "
                    "a C floor, cubinrun, cuda.bindings, cuda.core, CuPy, Triton and torch.")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 3 rounds of 200 launches")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 15; quick 3)")
    parser.add_argument("--launches", type=int, default=None,
                        help="launches per timed loop (default 2000; quick 200)")
    parser.add_argument("--only", default=None,
                        help="comma-separated path keys to run (default all): "
                             + ", ".join(p.key for p in PATHS))
    parser.add_argument("--seed", type=int, default=0, help="seed of the per-round shuffle")
    parser.add_argument("--json", default=None,
                        help="where to write the JSON (default $OUT/launch_overhead.json, "
                             "else bench/launch/results/launch_overhead.json)")
    parser.add_argument("--timeout", type=float, default=540.0,
                        help="seconds before the run dumps its stacks and exits (default 540)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 15)
    args.launches = args.launches or (200 if args.quick else 2000)
    if args.rounds < 1 or args.launches < 1:
        parser.error("--rounds and --launches must be at least 1")
    known = {p.key for p in PATHS}
    if args.only:
        wanted = {key.strip() for key in args.only.split(",")}
        if unknown := wanted - known:
            parser.error(f"--only: unknown path(s) {', '.join(sorted(unknown))}")
        args.only = wanted
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A stuck driver call must not hang the run: dump every stack and exit instead.
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    log(f"launch_overhead: {args.rounds} rounds x {args.launches} launches"
        f"{' (quick)' if args.quick else ''}")
    try:
        env = open_env()
    except Exception as exc:
        log(f"error: cannot set up the device: {one_line(exc)}")
        return 1
    log(f"device 0: {env.device.name} ({env.device.arch}); stream {env.stream:#x}")

    paths = [p for p in PATHS if not args.only or p.key in args.only]
    log("setting up paths")
    results = set_up(paths, env)
    log("warming up")
    warm_up(results, env, args.launches)
    log("measuring")
    measure(results, env, args.rounds, args.launches, args.seed)

    doc = record(results, env, args, started)
    destination = json_path(args.json)
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(json.dumps(doc, indent=2) + "\n")
    log(f"wrote {destination}")
    print(format_table(doc), flush=True)
    faulthandler.cancel_dump_traceback_later()
    bad = [r.path.key for r in results if r.path.key in REQUIRED and r.status != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
