"""How close is cubinrun's reported kernel time to the truth?

For the fp32 vector add (configs/vector_add.yaml) at 2^16 (about 2 us),
2^20, 2^24 and 2^28 elements, cold and hot L2, this compares in one run:

- cubinrun: `cubinrun launch --json` (its median), with each timer:
  `--timer events` (the default), `--timer cupti` (CUPTI kernel records; n/a
  without cupti-python) and `--timer graph` (a CUDA graph of back-to-back
  launches: hot only),
- ncu: `ncu --clock-control none --metrics gpu__time_duration.sum` over the
  same kernel's launches (`--cache-control all` for cold, `none` for hot),
- do_bench: `triton.testing.do_bench` on the same launch (it flushes L2 by
  zeroing 256 MB before each sample, so it has no hot mode),
- nvbench: NVIDIA's harness through its Python package `cuda-bench`
  (`cuda.bench`), timing the same launch: cold is its isolated measurement
  (L2 flushed by a memset, a blocking kernel ahead; the median of its
  samples, else their mean), hot its batch measurement (mean over
  back-to-back launches). It runs in a child process (`--nvbench-child`),
  since nvbench owns its process's benchmark registry,
- naive: one event pair around one launch on an idle GPU,
- and, to explain the differences: cubinrun's sampler with a write flush
  (memset) instead of its read flush, raw event pairs (no offset
  subtracted) around an empty kernel, and for the hot vector add the slope
  of pair time over 1..16 back-to-back launches and that kernel's own
  offset (pair(1) - slope; cubinrun subtracts the empty kernel's).

Run on the GPU machine from the repo root:
`PYTHONPATH=. python3 bench/timing/timing_fidelity.py [OUTDIR]` (`--quick` for a smoke
run, `--no-extras` for the timers against ncu only: about 1.5 minutes). The
tables come last and go to OUTDIR/timing_fidelity_table.txt too; full numbers
go to OUTDIR/timing_fidelity.json (default $OUT, else bench/timing/results/). Without
cuda-bench installed its columns read n/a.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "configs" / "vector_add.yaml"
EMPTY = REPO / "configs" / "empty3.yaml"
SIZES = {"2^16": 2**16, "2^20": 2**20, "2^24": 2**24, "2^28": 2**28}


def child_env() -> dict[str, str]:
    """This process's environment with the repo first on PYTHONPATH (kept, not replaced)."""
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def cli(*args: str) -> subprocess.CompletedProcess:
    env = child_env()
    return subprocess.run([sys.executable, "-m", "cubinrun", *args], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=600)


def cubinrun_timing(n: int, l2: str, timer: str = "events") -> dict:
    """`timing` of `cubinrun launch --json`: median_us, event_offset_us, ..."""
    l2_flag = [] if timer == "graph" else ["--l2", l2]     # the graph timer is hot only
    proc = cli("launch", "--json", str(SPEC), "--set", f"N={n}", *l2_flag, "--timer", timer)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr or proc.stdout[-2000:])
    return json.loads(proc.stdout)["timing"]


def timer_median_of(spec: Path, timer: str) -> float | None:
    proc = cli("launch", "--json", str(spec), "--timer", timer)
    if proc.returncode not in (0, 1):
        print(f"  --timer {timer} on {spec.name}: {proc.stderr.strip()[-300:]}", flush=True)
        return None
    return json.loads(proc.stdout)["timing"]["median_us"]


def timer_median(n: int, l2: str, timer: str) -> float | None:
    """A timer's median, or None (said why) when it cannot run here (no cupti-python)."""
    return (timer_timing(n, l2, timer) or {}).get("median_us")


def timer_timing(n: int, l2: str, timer: str) -> dict | None:
    try:
        return cubinrun_timing(n, l2, timer)
    except RuntimeError as e:
        print(f"  --timer {timer} at {n}, {l2}: {str(e).strip()[-300:]}", flush=True)
        return None


def ncu_median(n: int | None, l2: str, launches: int, spec: Path = SPEC,
               kernel: str = "add_kernel") -> float | None:
    """Median gpu__time_duration over the first `launches` launches of `kernel`."""
    ncu = "/usr/local/cuda/bin/ncu" if Path("/usr/local/cuda/bin/ncu").exists() else "ncu"
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all" if l2 == "cold" else "none",
           "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
           "--print-units", "base", "-k", f"regex:^{kernel}$", "--launch-count", str(launches),
           sys.executable, "-m", "cubinrun", "launch", str(spec),
           *(["--set", f"N={n}"] if n is not None else []),
           "--l2", "hot", "--warmup", "0.01", "--rep", "0.01"]
    env = child_env()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=90)
    except subprocess.TimeoutExpired:
        print("  ncu timed out", flush=True)
        return None
    rows = [r for r in csv.reader(io.StringIO(proc.stdout)) if r]
    header = next((i for i, r in enumerate(rows) if "gpu__time_duration.sum" in r), None)
    if header is None:
        print(f"  ncu gave no table (exit {proc.returncode}): {proc.stderr[-400:]}", flush=True)
        return None
    col = rows[header].index("gpu__time_duration.sum")
    values = []
    for r in rows[header + 1:]:
        try:
            values.append(float(r[col].replace(",", "")) / 1000.0)   # ns -> us
        except (ValueError, IndexError):
            continue                                   # the units row
    return statistics.median(values) if values else None


def ready_kernel(spec_path: Path, overrides: dict[str, str], session):
    """The spec's kernel loaded in `session`, its buffers filled."""
    from cubinrun.gpu.buffers import make_inputs
    from cubinrun.gpu.props import device_values
    from cubinrun.pipeline.prepare import plan_spec
    from cubinrun.pipeline.session import Inputs, make_ready
    from cubinrun.specfile.device_values import DeviceValues
    values = DeviceValues(lambda: device_values(session.device), "device 0")
    plan = plan_spec(spec_path, overrides, values)
    return make_ready(plan, session, Inputs(make_inputs(plan)))


class InProcess:
    """The vector add ready to launch in this process, for the in-process timers."""

    def __init__(self, spec_path: Path, n: int | None):
        from cubinrun.gpu import driver
        from cubinrun.pipeline.session import Session
        self.device = driver.open_device(0)
        overrides = {"N": str(n)} if n is not None else {}
        self.ready = ready_kernel(spec_path, overrides, Session(self.device))
        self.stream = driver.create_stream()

    def sampler(self, l2: str, write_flush: bool = False, rep_ms: float = 100.0,
                raw_events: bool = True) -> float:
        from cubinrun.gpu import driver
        from cubinrun.gpu.timers import time_kernel
        from cubinrun.gpu.timing import TimingKernels, TimingOptions
        kernels = TimingKernels(self.device)
        if write_flush:
            kernels.flush = lambda stream: driver.memset_async(
                kernels.flush_buffer, 0, kernels.flush_bytes, stream)
        try:
            timed = time_kernel(self.ready.launch, self.stream, kernels,
                                TimingOptions(warmup_ms=25, rep_ms=rep_ms, l2=l2,
                                              raw_events=raw_events))
        finally:
            kernels.close()
        return statistics.median(timed.samples_us)

    def naive(self, count: int = 50) -> float:
        from cubinrun.gpu import driver
        start, end = driver.create_event(), driver.create_event()
        times = []
        for _ in range(count):
            driver.stream_synchronize(self.stream)
            driver.record_event(start, self.stream)
            self.ready.launch(self.stream)
            driver.record_event(end, self.stream)
            driver.stream_synchronize(self.stream)
            times.append(1000 * driver.elapsed_ms(start, end))
        return statistics.median(times)

    def hot_slope(self, samples: int = 256) -> tuple[float, float]:
        """(per-launch slope, this kernel's own event offset) from hot pairs around
        1..16 back-to-back launches, as timing.event_offset_us does for the empty kernel."""
        from cubinrun.gpu.timing import (
            CALIBRATION_REPEATS, TimingKernels, least_squares_slope, offset_from_medians, sample)
        kernels = TimingKernels(self.device)
        medians = {}
        try:
            for _ in range(50):
                self.ready.launch(self.stream)
            for repeats in CALIBRATION_REPEATS:
                def inside(stream, repeats=repeats):
                    for _ in range(repeats):
                        self.ready.launch(stream)
                medians[repeats] = statistics.median(sample(
                    self.stream, kernels, inside, samples, per_batch=max(1, 256 // repeats),
                    clocks=True).pairs_us)
        finally:
            kernels.close()
        repeats = sorted(medians)
        slope = least_squares_slope(repeats, [medians[r] for r in repeats])
        return slope, offset_from_medians(medians)

    def do_bench(self) -> float | None:
        try:
            import torch
            from triton.testing import do_bench
        except ImportError:
            return None
        stream = torch.cuda.current_stream().cuda_stream
        return 1000 * do_bench(lambda: self.ready.launch(stream), warmup=25, rep=100,
                               return_mode="median")

    def close(self) -> None:
        self.ready.close()


def nvbench_child(sizes: list[int], json_path: str) -> None:
    """In a child process: nvbench times the vector add at `sizes`, writing its JSON."""
    import cuda.bench as bench

    from cubinrun.gpu import driver
    from cubinrun.pipeline.session import Session
    session = Session(driver.open_device(0))  # the primary context, which nvbench's runtime shares
    readies = {}

    def vector_add(state) -> None:
        n = state.get_int64("N")
        if n not in readies:
            readies[n] = ready_kernel(SPEC, {"N": str(n)}, session)
        ready = readies[n]
        state.add_element_count(n)
        state.add_global_memory_reads(8 * n)
        state.add_global_memory_writes(4 * n)
        state.exec(lambda launch: ready.launch(launch.get_stream().__cuda_stream__()[1]))

    bench.register(vector_add).add_int64_power_of_two_axis(
        "N", [n.bit_length() - 1 for n in sizes])
    bench.run_all_benchmarks(["nvbench", "--devices", "0", "--jsonbin", json_path])


def nvbench_times(sizes: list[int]) -> dict[int, dict[str, float | None]]:
    """{n: {"cold": us, "hot": us}} from nvbench in a child process; {} without cuda-bench."""
    import importlib.util
    if importlib.util.find_spec("cuda.bench") is None:
        print("  cuda-bench is not installed: no nvbench columns", flush=True)
        return {}
    import tempfile
    json_path = Path(tempfile.mkdtemp(prefix="nvbench-")) / "vector_add.json"  # + sample files
    proc = subprocess.run([sys.executable, __file__, "--nvbench-child", str(json_path),
                           *map(str, sizes)], capture_output=True, text=True, cwd=REPO,
                          env=child_env(), timeout=900)
    if proc.returncode != 0 or not json_path.exists():
        print(f"  nvbench failed (exit {proc.returncode}): {proc.stdout[-1500:]}"
              f"{proc.stderr[-1500:]}", flush=True)
        return {}
    print(proc.stdout[-3000:], flush=True)          # nvbench's own markdown table
    from cuda.bench.results import BenchmarkResult
    out = {}
    for state in BenchmarkResult.from_json(json_path)["vector_add"]:
        n = int(state.point.get("N[pow2]", state.point.get("N")))
        if n < 64:                          # the pow2 axis may report its exponent
            n = 2 ** n
        summaries = {tag: s.value for tag, s in state.summaries.items()}
        median = state.center(statistics.median)
        cold = median if median is not None else summaries.get("nv/cold/time/gpu/mean")
        hot = summaries.get("nv/batch/time/gpu/mean")
        out[n] = {"cold": None if cold is None else 1e6 * float(cold),
                  "hot": None if hot is None else 1e6 * float(hot),
                  "cold_mean": (1e6 * float(summaries["nv/cold/time/gpu/mean"])
                                if summaries.get("nv/cold/time/gpu/mean") else None),
                  "sm_clock_mhz": (float(summaries["nv/cold/sm_clock_rate/mean"]) / 1e6
                                   if summaries.get("nv/cold/sm_clock_rate/mean") else None)}
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--nvbench-child":
        return nvbench_child([int(a) for a in sys.argv[3:]], sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=None,
                        help="folder for the JSON (default $OUT, else bench/timing/results)")
    parser.add_argument("--quick", action="store_true", help="two sizes, fewer ncu launches")
    parser.add_argument("--no-ncu", action="store_true")
    parser.add_argument("--no-extras", action="store_true",
                        help="only the timers and ncu (no nvbench, do_bench, naive, slopes)")
    args = parser.parse_args()
    sizes = {k: SIZES[k] for k in (("2^16", "2^20") if args.quick else SIZES)}
    launches = 8 if args.quick else 12
    results = []
    t0 = time.time()
    out = args.out or (Path(os.environ["OUT"]) if os.environ.get("OUT")
                       else Path(__file__).with_name("results"))
    out.mkdir(parents=True, exist_ok=True)
    nvbench = {} if args.no_extras else nvbench_times(list(sizes.values()))

    empty_hot = None
    if not args.no_extras:
        empty = InProcess(EMPTY, None)
        empty_hot = empty.sampler("hot")
        empty.close()
        print(f"empty kernel, raw event pairs hot: {empty_hot:.2f} us", flush=True)
    # the graph timer on an empty 1-CTA kernel: its time per node plus the
    # start-up the graph hides, which is measured on that same kernel
    graph_empty = timer_median_of(EMPTY, "graph")
    print(f"empty kernel, graph timer: {graph_empty} us", flush=True)

    for label, n in sizes.items():
        row = {"size": label, "n": n, "naive_idle": None, "sampler_cold_write_flush": None,
               "do_bench": None, "hot_slope": None, "hot_kernel_offset": None}
        if not args.no_extras:
            proc = InProcess(SPEC, n)
            row.update(naive_idle=proc.naive(),
                       sampler_cold_write_flush=proc.sampler("cold", write_flush=True),
                       do_bench=proc.do_bench())
            row["hot_slope"], row["hot_kernel_offset"] = proc.hot_slope(256 if n < 2**24 else 32)
            proc.close()
        row["nvbench_cold"] = nvbench.get(n, {}).get("cold")
        row["nvbench_hot"] = nvbench.get(n, {}).get("hot")
        row["nvbench"] = nvbench.get(n)
        for l2 in ("cold", "hot"):
            timing = cubinrun_timing(n, l2)
            row[f"cubinrun_{l2}"] = timing["median_us"]
            row[f"event_offset_{l2}"] = timing["event_offset_us"]
            row[f"sm_clock_{l2}"] = timing.get("sm_clock_mhz")
            row[f"ncu_{l2}"] = None if args.no_ncu else ncu_median(n, l2, launches)
            row[f"cupti_{l2}"] = timer_median(n, l2, "cupti")
        graph = timer_timing(n, "hot", "graph") or {}
        row["graph_hot"] = graph.get("median_us")
        row["graph_startup"] = graph.get("graph_startup_us")     # in graph_hot
        results.append(row)
        print(json.dumps(row), flush=True)
        (out / "timing_fidelity.json").write_text(json.dumps(      # kept as it goes
            {"empty_sampler_hot_us": empty_hot, "graph_empty_us": graph_empty,
             "rows": results}, indent=2))

    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text)
        lines.append(text)

    def fmt(x):
        return "   n/a" if x is None else f"{x:8.2f}"

    def ratio(a, b):
        return "   n/a" if a is None or b is None else f"{a / b:6.3f}"

    say(f"\ntiming fidelity, vector add fp32, medians in us ({time.time() - t0:.0f} s)")
    say("each timer over ncu (cold; hot); goal: one of them within 2% at every cell")
    say("size  | events cold cupti cold | events hot cupti hot graph hot")
    for r in results:
        say(f"{r['size']:5} | {ratio(r['cubinrun_cold'], r['ncu_cold'])}      "
            f"{ratio(r['cupti_cold'], r['ncu_cold'])}     | "
            f"{ratio(r['cubinrun_hot'], r['ncu_hot'])}     {ratio(r['cupti_hot'], r['ncu_hot'])}"
            f"    {ratio(r['graph_hot'], r['ncu_hot'])}")
    say("size  | ncu cold events  cupti    | ncu hot  events   cupti    graph    (us)")
    for r in results:
        say(f"{r['size']:5} | {fmt(r['ncu_cold'])} {fmt(r['cubinrun_cold'])} "
            f"{fmt(r['cupti_cold'])} | {fmt(r['ncu_hot'])} {fmt(r['cubinrun_hot'])} "
            f"{fmt(r['cupti_hot'])} {fmt(r['graph_hot'])}")
    say(f"graph timer on an empty kernel: {fmt(graph_empty)} us; the start-up it adds to each "
        f"launch (in the graph column): "
        + ", ".join(f"{r['size']} {fmt(r.get('graph_startup')).strip()}" for r in results))
    say()
    say("size  | ncu cold cubinrun nvbench | ncu hot  cubinrun nvbench | "
          "cubinrun/ncu nvbench/ncu (cold; hot)")
    for r in results:
        say(f"{r['size']:5} | {fmt(r['ncu_cold'])} {fmt(r['cubinrun_cold'])} "
            f"{fmt(r['nvbench_cold'])} | {fmt(r['ncu_hot'])} {fmt(r['cubinrun_hot'])} "
            f"{fmt(r['nvbench_hot'])} | {ratio(r['cubinrun_cold'], r['ncu_cold'])} "
            f"{ratio(r['nvbench_cold'], r['ncu_cold'])}; "
            f"{ratio(r['cubinrun_hot'], r['ncu_hot'])} {ratio(r['nvbench_hot'], r['ncu_hot'])}")
    say("\nhot: slope of pair time over 1..16 launches, and the vector add's own offset "
          "(pair(1) - slope) next to the empty kernel's that cubinrun subtracts")
    say("size  | ncu hot  slope    | kernel offset  empty offset | SM clock cold/hot MHz")
    for r in results:
        say(f"{r['size']:5} | {fmt(r['ncu_hot'])} {fmt(r['hot_slope'])} | "
            f"{fmt(r['hot_kernel_offset'])}       {fmt(r['event_offset_hot'])} | "
            f"{fmt(r['sm_clock_cold'])} {fmt(r['sm_clock_hot'])}")
    say()
    say("size  | ncu cold cubinrun ratio | ncu hot  cubinrun ratio | offset | do_bench naive  wflush")
    for r in results:
        say(f"{r['size']:5} | {fmt(r['ncu_cold'])} {fmt(r['cubinrun_cold'])} "
            f"{ratio(r['cubinrun_cold'], r['ncu_cold'])} | {fmt(r['ncu_hot'])} "
            f"{fmt(r['cubinrun_hot'])} {ratio(r['cubinrun_hot'], r['ncu_hot'])} | "
            f"{fmt(r['event_offset_hot'])} | "
            f"{fmt(r['do_bench'])} {fmt(r['naive_idle'])} {fmt(r['sampler_cold_write_flush'])}")
    (out / "timing_fidelity_table.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
