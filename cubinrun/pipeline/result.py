"""What a run was asked to do (`RunOptions`) and what it gave (`RunResult`):
the launch, the checks, the timing and where the host's time went, as the
report and every result file read it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import EXIT_CHECK_FAILED, EXIT_OK
from ..specfile import Spec


@dataclass(frozen=True)
class RunOptions:
    device: int | None = None
    warmup_ms: float | None = None      # None: the spec's bench.warmup
    rep_ms: float | None = None
    l2: str | None = None
    bench: bool = True
    progress: bool = True
    raw_events: bool = False            # keep the event pair's own offset in the samples
    keep_samples: bool = False          # every timing sample in the JSON (`--samples`)
    guard: bool = True                  # guard bands around the buffers (gpu/guards.py)
    repeat: int = 1                     # launches compared bit for bit (debug/repeat.py)
    timer: str = "events"               # events, cupti or graph (gpu/timers/)
    max_noise: float | None = None      # stop sampling once the median is this steady
    min_samples: int | None = None      # None: timing.MIN_SAMPLES
    energy: bool = False                # joules per launch from NVML (gpu/energy.py)
    check: bool = True                  # False: outputs neither checked nor saved (re-timing)
    budget_share: float = 1.0           # of the warm-up and timing budgets: 1/N of a run's N processes


@dataclass
class RunResult:
    spec: Spec
    device: dict[str, Any]
    kernel: dict[str, Any]
    launched: bool
    checks: list = field(default_factory=list)       # check.CheckResult
    timing: Any = None                               # stats.Summary
    l2: str | None = None
    event_offset_us: float | None = None             # subtracted from every sample
    saved: list[str] = field(default_factory=list)
    samples_us: list[float] | None = None            # kept with RunOptions.keep_samples
    dropped_samples: int = 0                         # timing.corrected() says why
    sm_clock_mhz: list[float | None] = field(default_factory=list)   # per kept sample
    throttled_samples: int = 0                       # dropped: taken below 75% of the top clock
    timer: str | None = None                         # which timer took the samples
    stopped: str | None = None                       # "noise" (--max-noise met) or "budget"
    launches_per_sample: int = 1                     # the graph timer's launches per replay
    graph_startup_us: float | None = None            # the graph timer's, added to each launch
    noise: float | None = None                       # the median's relative error (gpu/timers/noise.py)
    energy: Any = None                               # energy.Energy, with --energy
    timing_s: float | None = None                    # wall time of the timing itself
    debug: list = field(default_factory=list)        # guard and repeat reports (debug/)
    stages: dict[str, float] = field(default_factory=dict)   # seconds: see STAGES

    @property
    def passed(self) -> bool | None:
        from ..hostdata.check import summarize
        if any(report.passed is False for report in self.debug):
            return False
        return summarize(self.checks)

    @property
    def exit_code(self) -> int:
        return EXIT_CHECK_FAILED if self.passed is False else EXIT_OK

    def throughput(self) -> dict[str, float | None]:
        bench = self.spec.bench
        seconds = self.timing.median * 1e-6 if self.timing else None
        gbps = bench.bytes / seconds / 1e9 if seconds and bench.bytes is not None else None
        tflops = bench.flops / seconds / 1e12 if seconds and bench.flops is not None else None
        peak_bw, peak_fp32 = self.device.get("peak_bandwidth_gbps"), self.device.get("peak_fp32_tflops")
        return {
            "gbps": gbps,
            "tflops": tflops,
            "peak_gbps": peak_bw,
            "bandwidth_fraction": gbps / peak_bw if gbps and peak_bw else None,
            "peak_fp32_tflops": peak_fp32,
            "fp32_fraction": tflops / peak_fp32 if tflops and peak_fp32 else None,
        }

    def clock_json(self) -> dict[str, float | None]:
        return clock_summary(self.sm_clock_mhz)

    def to_json(self) -> dict:
        spec = self.spec
        timing = None
        if self.timing is not None:
            timing = {**self.timing.to_json(), "l2": self.l2, "timer": self.timer,
                      "event_offset_us": self.event_offset_us, **self.clock_json(),
                      "dropped_samples": self.dropped_samples,
                      "throttled_samples": self.throttled_samples,
                      "noise": self.noise,
                      "stopped": self.stopped,
                      "launches_per_sample": self.launches_per_sample,
                      "graph_startup_us": self.graph_startup_us,
                      "elapsed_s": self.timing_s}
            if self.samples_us is not None:
                timing["samples_us"] = self.samples_us
                timing["sm_clocks_mhz"] = self.sm_clock_mhz     # each sample's, in order
        return {
            "kernel": self.kernel.get("cxx_name", self.kernel["name"]),   # as C++ writes it
            "kernel_mangled": self.kernel["name"],                        # the symbol
            "kernel_file": str(spec.kernel.path),
            "device": self.device,
            "grid": list(spec.grid),
            "launched_grid": list(spec.launched_grid),
            "block": list(spec.block),
            "shared": spec.launch.shared,
            "cluster": self.kernel.get("cluster"),
            "resources": {k: v for k, v in self.kernel.items()
                          if k not in ("name", "cxx_name", "cluster")},
            "launched": self.launched,
            "timing": timing,
            "throughput": self.throughput(),
            "check": {
                "passed": self.passed,
                "outputs": {c.name: c.to_json() for c in self.checks},
            },
            "energy": self.energy.to_json() if self.energy is not None else None,
            "saved": self.saved,
            "stages_s": {name: round(self.stages[name], 6) for name in STAGES
                         if name in self.stages},
            **{report.key: report.to_json() for report in self.debug},
        }


# Where a launch's host time goes, in seconds. init: making the inputs (the
# time the host waited for it; the copies run meanwhile); upload: the rest of
# filling the buffers (waiting for copies); launch: the kernel, launched once and
# waited for; download: waiting for the outputs' copies; check: the rest of
# checking and saving the outputs (the copies run meanwhile).
STAGES = ("init", "upload", "launch", "download", "check")


def clock_summary(clocks_mhz) -> dict[str, float | None]:
    """The SM clock over samples (None where a sample had no probe record): the
    median, the lowest and the highest, as a result's timing holds them."""
    import statistics
    clocks = [c for c in clocks_mhz if c is not None]
    return {"sm_clock_mhz": statistics.median(clocks) if clocks else None,
            "sm_clock_min_mhz": min(clocks) if clocks else None,
            "sm_clock_max_mhz": max(clocks) if clocks else None}
