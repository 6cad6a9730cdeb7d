"""Where does an event pair's extra time come from, and what removes it?

cubinrun's sampler (one event pair around one launch, queued behind a spin
kernel) reads a near-constant 2 us above ncu's gpu__time_duration
(bench/README.md). This script measures, in one run, the raw numbers that
candidate corrections are built from, next to ncu:

- pair: the sampler's median (one pair around one launch; cold: a read
  flush queued before the pair),
- around R launches: pairs around R back-to-back launches for R = 1..16
  (cold: R x (flush, kernel), minus R x flush alone), whose least-squares
  slope is the per-launch time in a steady stream,
- nothing: a pair around nothing (the events' own cost),
- corrected: the sampler with cubinrun's calibrated offset subtracted.

Kernels: the empty kernel (configs/empty3.yaml) and the fp32 vector add at
2^16, 2^20 and 2^24. Run on the GPU machine from the repo root:
`PYTHONPATH=. python3 bench/timing/event_offset.py`. Raw numbers go to
$OUT/event_offset.json (or bench/timing/results/), a table comes last.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing_fidelity import EMPTY, REPO, SPEC, InProcess, ncu_median  # noqa: E402

REPEATS = (1, 2, 4, 8, 16)
SAMPLES = 200
MAX_QUEUED = 512                    # launches queued behind one spin


def pair_median(proc: InProcess, kernels, body, launches_per_sample: int) -> float:
    """Median of event pairs around `body(stream)`, queued behind spins."""
    from cubinrun.gpu import driver
    stream = proc.stream
    per_batch = max(1, MAX_QUEUED // max(1, launches_per_sample))
    pairs = [(driver.create_event(), driver.create_event()) for _ in range(SAMPLES)]
    for first in range(0, SAMPLES, per_batch):
        batch = pairs[first:first + per_batch]
        kernels.spin(stream, min(20_000_000, 200_000 + 16_000 * len(batch) * max(1, launches_per_sample)))
        for start, end in batch:
            driver.record_event(start, stream)
            body(stream)
            driver.record_event(end, stream)
    driver.stream_synchronize(stream)
    times = [1000.0 * driver.elapsed_ms(s, e) for s, e in pairs]
    for s, e in pairs:
        driver.destroy_event(s)
        driver.destroy_event(e)
    return statistics.median(times)


def measure(proc: InProcess, kernels) -> dict:
    from cubinrun.gpu.timing import least_squares_slope as slope
    launch = proc.ready.launch
    for _ in range(200):
        launch(proc.stream)
    row = {"nothing": pair_median(proc, kernels, lambda s: None, 0)}
    for l2 in ("hot", "cold"):
        around, flush_only = {}, {}
        for r in REPEATS:
            if l2 == "hot":
                def body(s, r=r):
                    for _ in range(r):
                        launch(s)
                around[r] = pair_median(proc, kernels, body, r)
            else:
                def body(s, r=r):
                    for _ in range(r):
                        kernels.flush(s)
                        launch(s)

                def flushes(s, r=r):
                    for _ in range(r):
                        kernels.flush(s)
                around[r] = pair_median(proc, kernels, body, 2 * r)
                flush_only[r] = pair_median(proc, kernels, flushes, r)
        if l2 == "hot":
            row["hot_pair"] = around[1]
            row["hot_slope"] = slope(REPEATS, [around[r] for r in REPEATS])
        else:
            # pair around (flush, kernel) minus pair around flush: the kernel's share
            row["cold_pair_minus_flush"] = around[1] - flush_only[1]
            row["cold_slope"] = slope(REPEATS, [around[r] - flush_only[r] for r in REPEATS])
        row[f"{l2}_around"] = around
        if flush_only:
            row["flush_only"] = flush_only
    return row


def sampler_medians(proc: InProcess) -> dict:
    return {"sampler_hot": proc.sampler("hot"), "sampler_cold": proc.sampler("cold"),
            "corrected_hot": proc.sampler("hot", raw_events=False),
            "corrected_cold": proc.sampler("cold", raw_events=False)}


def main() -> None:
    from cubinrun.gpu.timing import TimingKernels
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path(__file__).with_name("results")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    rows = []
    cases = [("empty", EMPTY, None, "empty3"), ("2^16", SPEC, 2**16, "add_kernel"),
             ("2^20", SPEC, 2**20, "add_kernel"), ("2^24", SPEC, 2**24, "add_kernel")]
    for label, spec, n, name in cases:
        proc = InProcess(spec, n)
        kernels = TimingKernels(proc.device)
        row = {"case": label, **sampler_medians(proc), **measure(proc, kernels)}
        kernels.close()
        proc.close()
        for l2 in ("hot", "cold"):
            row[f"ncu_{l2}"] = ncu_median(n, l2, 12, spec=spec, kernel=name)
        rows.append(row)
        print(json.dumps(row), flush=True)
        (out / "event_offset.json").write_text(json.dumps(rows, indent=2))

    print(f"\nevent pair offsets, medians in us ({time.time() - t0:.0f} s)")
    print("case  | nothing | hot: ncu pair slope  | cold: ncu pair-flush slope | corrected hot cold")
    for r in rows:
        f = lambda k: "   n/a" if r.get(k) is None else f"{r[k]:6.2f}"   # noqa: E731
        print(f"{r['case']:5} | {f('nothing')}  | {f('ncu_hot')} {f('hot_pair')} {f('hot_slope')} | "
              f"{f('ncu_cold')} {f('cold_pair_minus_flush')} {f('cold_slope')} | "
              f"{f('corrected_hot')} {f('corrected_cold')}")


if __name__ == "__main__":
    main()
