"""How close is cubinrun's reported kernel time to the truth?

For the fp32 vector add (configs/vector_add.yaml) at 2^16 (about 2 us),
2^20, 2^24 and 2^28 elements, cold and hot L2, this compares in one run:

- cubinrun: `cubinrun launch --json` (its median),
- ncu: `ncu --clock-control none --metrics gpu__time_duration.sum` over the
  same kernel's launches (`--cache-control all` for cold, `none` for hot),
- do_bench: `triton.testing.do_bench` on the same launch (it flushes L2 by
  zeroing 256 MB before each sample, so it has no hot mode),
- naive: one event pair around one launch on an idle GPU,
- and, to explain the differences: cubinrun's sampler with a write flush
  (memset) instead of its read flush, and raw event pairs (no offset
  subtracted) around an empty kernel.

Run on the GPU machine from the repo root: `PYTHONPATH=. python3 bench/timing_fidelity.py`
(`--quick` for a smoke run). The table comes last; full numbers go to
$OUT/timing_fidelity.json (or bench/results/).
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

REPO = Path(__file__).resolve().parent.parent
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


def cubinrun_timing(n: int, l2: str) -> dict:
    """`timing` of `cubinrun launch --json`: median_us, event_offset_us, ..."""
    proc = cli("launch", "--json", str(SPEC), "--set", f"N={n}", "--l2", l2)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return json.loads(proc.stdout)["timing"]


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


class InProcess:
    """The vector add ready to launch in this process, for the in-process timers."""

    def __init__(self, spec_path: Path, n: int | None):
        from cubinrun import driver
        from cubinrun.run import make_ready
        from cubinrun.spec import load_spec
        self.device = driver.open_device(0)
        overrides = {"N": str(n)} if n is not None else {}
        self.ready = make_ready(load_spec(spec_path, overrides), self.device)
        self.stream = driver.create_stream()

    def sampler(self, l2: str, write_flush: bool = False, rep_ms: float = 100.0,
                raw_events: bool = True) -> float:
        from cubinrun import driver
        from cubinrun.timing import TimingKernels, TimingOptions, time_kernel
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
        from cubinrun import driver
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two sizes, fewer ncu launches")
    parser.add_argument("--no-ncu", action="store_true")
    args = parser.parse_args()
    sizes = {k: SIZES[k] for k in (("2^16", "2^20") if args.quick else SIZES)}
    launches = 8 if args.quick else 12
    results = []
    t0 = time.time()
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)

    empty = InProcess(EMPTY, None)
    empty_hot = empty.sampler("hot")
    empty.close()
    print(f"empty kernel, raw event pairs hot: {empty_hot:.2f} us", flush=True)

    for label, n in sizes.items():
        proc = InProcess(SPEC, n)
        row = {"size": label, "n": n, "naive_idle": proc.naive(),
               "sampler_cold_write_flush": proc.sampler("cold", write_flush=True),
               "do_bench": proc.do_bench()}
        proc.close()
        for l2 in ("cold", "hot"):
            timing = cubinrun_timing(n, l2)
            row[f"cubinrun_{l2}"] = timing["median_us"]
            row[f"event_offset_{l2}"] = timing["event_offset_us"]
            row[f"ncu_{l2}"] = None if args.no_ncu else ncu_median(n, l2, launches)
        results.append(row)
        print(json.dumps(row), flush=True)
        (out / "timing_fidelity.json").write_text(json.dumps(      # kept as it goes
            {"empty_sampler_hot_us": empty_hot, "rows": results}, indent=2))

    def fmt(x):
        return "   n/a" if x is None else f"{x:8.2f}"

    def ratio(a, b):
        return "   n/a" if a is None or b is None else f"{a / b:6.3f}"

    print(f"\ntiming fidelity, vector add fp32, medians in us ({time.time() - t0:.0f} s)")
    print("size  | ncu cold cubinrun ratio | ncu hot  cubinrun ratio | offset | do_bench naive  wflush")
    for r in results:
        print(f"{r['size']:5} | {fmt(r['ncu_cold'])} {fmt(r['cubinrun_cold'])} "
              f"{ratio(r['cubinrun_cold'], r['ncu_cold'])} | {fmt(r['ncu_hot'])} "
              f"{fmt(r['cubinrun_hot'])} {ratio(r['cubinrun_hot'], r['ncu_hot'])} | "
              f"{fmt(r['event_offset_hot'])} | "
              f"{fmt(r['do_bench'])} {fmt(r['naive_idle'])} {fmt(r['sampler_cold_write_flush'])}")


if __name__ == "__main__":
    main()
