"""`cubinrun launch`: the whole path on a GPU.

prepare (binary, plan, launcher) -> device -> kernel -> buffers -> launch
once and synchronise -> check and save outputs -> time -> result.

A `Session` holds what runs on one device share: a multi-run command keeps
one per worker, so a sweep loads its binary, module and timing kernels once.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from . import driver
from .errors import EXIT_CHECK_FAILED, EXIT_OK
from .spec import Spec


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
    guard: bool = True                  # guard bands around the buffers (debug/guards.py)
    repeat: int = 1                     # launches compared bit for bit (debug/repeat.py)


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
    sm_clock_mhz: list[float] = field(default_factory=list)   # measured while timing
    timing_s: float | None = None                    # wall time of the timing itself
    debug: list = field(default_factory=list)        # guard and repeat reports (debug/)
    stages: dict[str, float] = field(default_factory=dict)   # seconds: see STAGES

    @property
    def passed(self) -> bool | None:
        from .check import summarize
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
        import statistics
        clocks = self.sm_clock_mhz
        return {"sm_clock_mhz": statistics.median(clocks) if clocks else None,
                "sm_clock_min_mhz": min(clocks) if clocks else None,
                "sm_clock_max_mhz": max(clocks) if clocks else None}

    def to_json(self) -> dict:
        spec = self.spec
        timing = None
        if self.timing is not None:
            timing = {**self.timing.to_json(), "l2": self.l2,
                      "event_offset_us": self.event_offset_us, **self.clock_json(),
                      "dropped_samples": self.dropped_samples, "elapsed_s": self.timing_s}
            if self.samples_us is not None:
                timing["samples_us"] = self.samples_us
        return {
            "kernel": self.kernel["name"],
            "kernel_file": str(spec.kernel.path),
            "device": self.device,
            "grid": list(spec.grid),
            "launched_grid": list(spec.launched_grid),
            "block": list(spec.block),
            "shared": spec.launch.shared,
            "cluster": self.kernel.get("cluster"),
            "resources": {k: v for k, v in self.kernel.items() if k not in ("name", "cluster")},
            "launched": self.launched,
            "timing": timing,
            "throughput": self.throughput(),
            "check": {
                "passed": self.passed,
                "outputs": {c.name: c.to_json() for c in self.checks},
            },
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


@dataclass
class Ready:
    """A kernel loaded, its buffers filled and its launch bound: `launch(stream)`
    queues one launch. `close()` frees the device memory."""
    prepared: Any
    kernel: Any                 # kernel.LoadedKernel
    memory: Any                 # buffers.DeviceMemory
    launch: Callable[[int], None]
    seconds: dict[str, float] = field(default_factory=dict)   # init, upload

    def close(self) -> None:
        self.memory.free()


class Session:
    """What the runs on one device share: the device (its primary context
    current), one stream, the timing kernels (with the event offset they measure
    once), binaries by source and loaded modules by content."""

    def __init__(self, device: driver.Device):
        self.device = device
        self._stream: int | None = None
        self._timing = None
        self._binaries: dict[tuple, Any] = {}
        self._modules: dict[bytes, Any] = {}
        self._staging = None

    @property
    def stream(self) -> int:
        if self._stream is None:
            self._stream = driver.create_stream()
        return self._stream

    def timing_kernels(self):
        from .timing import TimingKernels
        if self._timing is None:
            self._timing = TimingKernels(self.device)
        return self._timing

    def load_binary(self, spec: Spec, arch: str | None):
        """binary.load_binary, once per kernel file (as it is now), kind, options and arch."""
        from .binary.load import load_binary
        kernel = spec.kernel
        try:
            stat = kernel.path.stat()
            version = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            version = None                  # load_binary says what is wrong
        key = (kernel.kind, str(kernel.path), version, kernel.name, kernel.options, arch)
        if version is None or key not in self._binaries:
            self._binaries[key] = load_binary(spec, arch)
        return self._binaries[key]

    def staging(self, largest: int):
        """Pinned staging slots big enough for buffers of `largest` bytes, kept from
        run to run: pinning tens of MiB costs milliseconds each time."""
        from .transfer import Staging
        if self._staging is None or not self._staging.holds(largest):
            if self._staging is not None:
                self._staging.close()
            self._staging = Staging(largest)
        return self._staging

    def load_module(self, cubin: bytes):
        import hashlib
        key = hashlib.blake2b(cubin, digest_size=16).digest()
        if key not in self._modules:
            self._modules[key] = driver.load_module(cubin, what=f"cubin for {self.device.arch}")
        return self._modules[key]

    def close(self) -> None:
        if self._timing is not None:
            self._timing.close()
            self._timing = None
        if self._staging is not None:
            self._staging.close()
            self._staging = None


def make_ready(spec: Spec, device: driver.Device, arch: str | None = None,
               early: Early | None = None, session: Session | None = None,
               guard: bool = False, repeat: int = 1) -> Ready:
    """`early`: what was done before the device was open (see `run_spec`);
    `session`: binaries and modules to reuse; `guard`: guard bands around the
    buffers; `repeat`: the launches `--repeat` makes (room for run 1's buffers
    is checked before allocating)."""
    from . import buffers
    from .arguments import launcher_values
    from .kernel import load_kernel
    from .prepare import check_device, prepare
    from .specialization import check_addresses
    if early and early.prepared:
        prepared = early.prepared
        check_device(prepared, device)
    else:
        prepared = prepare(spec, device, arch, load=session.load_binary if session else None)
    plan, launcher = prepared.plan, prepared.launcher
    kernel = load_kernel(prepared.cubin, prepared.kernel_name, device, plan,
                         module=session.load_module(prepared.cubin) if session else None)
    from . import module_globals
    bound = module_globals.bind(spec, kernel.module, prepared.cubin)
    began = time.perf_counter()
    inputs = early.inputs if early else buffers.make_inputs(plan)
    made = (early.seconds if early else time.perf_counter() - began)
    memory = buffers.allocate(plan, inputs, device.name, guard=guard, repeat=repeat,
                              staging=session.staging if session else None,
                              module_globals=bound)
    try:
        values = launcher_values(plan.slots, memory)
        check_addresses(plan, values)
        launch = spec.launch
        config = launcher.Config(
            kernel.handle, block=spec.block, shared=launch.shared, num_ctas=launch.num_ctas,
            cluster=launch.cluster, cooperative=launch.cooperative, pdl=launch.pdl,
            global_scratch=memory.global_scratch, profile_scratch=memory.profile_scratch)
    except BaseException:
        memory.free()
        raise
    gx, gy, gz = spec.grid
    launch_fn = launcher.launch

    def launch_once(stream: int) -> None:
        launch_fn(config, gx, gy, gz, stream, *values)
    seconds = {"init": made + memory.seconds["init"], "upload": memory.seconds["upload"]}
    return Ready(prepared, kernel, memory, launch_once, seconds)


def check_data(spec: Spec) -> None:
    """The host data and check references the spec describes, checked without
    making them: a dry run evaluates them, and a launch finds a bad reference
    before the kernel runs, not after."""
    from .check import check_reference
    from .hostdata import check_init
    for buffer in (*spec.buffers.values(), *spec.globals.values()):
        check_init(buffer)
    env = spec.expression_env()
    outputs = {**spec.buffers, **spec.globals}
    for check in spec.checks:
        check_reference(check, outputs[check.output], outputs, env)


@dataclass(frozen=True)
class Early:
    """Work that needs no GPU, done while the driver initialises."""
    prepared: Any               # prepare.Prepared; None when the kernel is compiled for the device
    inputs: list                # every buffer's input (hostdata.InputValues), checked
    seconds: float = 0.0        # making them


def prepare_early(spec: Spec) -> Early:
    from .buffers import make_inputs
    from .plan import make_plan
    from .prepare import needs_device_target, prepare
    prepared = None if needs_device_target(spec) else prepare(spec)
    began = time.perf_counter()
    inputs = make_inputs(prepared.plan if prepared else make_plan(spec))
    return Early(prepared, inputs, time.perf_counter() - began)


def run_spec(spec: Spec, options: RunOptions,
             opening: driver.DeviceOpening | None = None,
             session: Session | None = None, early: Early | None = None) -> RunResult:
    """Run the spec. With `opening` (the device being opened on a thread), the
    binary, the launcher and the host data are made before waiting for it,
    while the driver initialises. With `session`, on its device, reusing what
    it holds (and `early`, if it was made before the session's device was
    open); without, on a session of this run's own."""
    own = session is None
    if session is None:
        if opening is not None:
            early = prepare_early(spec)
            opened = opening.wait()
        else:
            opened = driver.open_device(options.device or 0)
        session = Session(opened)
    try:
        ready = make_ready(spec, session.device, early=early, session=session,
                           guard=options.guard, repeat=options.repeat)
        try:
            return _Run(spec, ready, session, options).execute()
        finally:
            ready.close()
    finally:
        if own:
            session.close()


class _Run:
    def __init__(self, spec: Spec, ready: Ready, session: Session, options: RunOptions):
        self.spec, self.ready, self.options = spec, ready, options
        self.session, self.device = session, session.device
        self.plan = ready.prepared.plan
        self.launcher = ready.prepared.launcher
        self.kernel_name = ready.kernel.name

    def execute(self) -> RunResult:
        from .props import peak_bandwidth_gbps, peak_fp32_tflops
        from .stats import Summary
        spec, plan, device, kernel = self.spec, self.plan, self.device, self.ready.kernel
        attr = lambda name: driver.device_attribute(device.handle, name)  # noqa: E731
        device_info = {
            "name": device.name, "ordinal": device.ordinal, "arch": device.arch,
            "peak_bandwidth_gbps": peak_bandwidth_gbps(attr("MEMORY_CLOCK_RATE"),
                                                       attr("GLOBAL_MEMORY_BUS_WIDTH")),
            "peak_fp32_tflops": peak_fp32_tflops(device.capability, attr("MULTIPROCESSOR_COUNT"),
                                                 attr("CLOCK_RATE")),
        }
        kernel_info = {"name": kernel.name, "cluster": list(plan.cluster) if plan.cluster else None,
                       **kernel.attributes}
        result = RunResult(spec, device_info, kernel_info, launched=plan.ctas > 0)
        result.stages.update(self.ready.seconds)
        stream = self.session.stream
        began = time.perf_counter()
        if plan.ctas > 0:
            self.guarded(self.ready.launch, stream)
            driver.stream_synchronize(stream, context=f"after kernel {kernel.name!r}")
        result.stages["launch"] = time.perf_counter() - began
        self.check_and_save(self.ready.memory, result)
        if plan.ctas > 0:
            self.debug_checks(result, stream)
        if self.options.bench and plan.ctas > 0:
            result.l2 = self.options.l2 or spec.bench.l2
            started = time.perf_counter()
            timed = self.time(self.ready.launch, stream, result.l2)
            result.timing_s = time.perf_counter() - started
            result.timing = Summary.from_samples(timed.samples_us)
            result.event_offset_us = timed.event_offset_us
            result.dropped_samples = timed.dropped
            result.sm_clock_mhz = timed.sm_clock_mhz
            if self.options.keep_samples:
                result.samples_us = timed.samples_us
        return result

    def guarded(self, fn, *args):
        """Run `fn`, turning the launcher's CUresult into a CudaError naming the kernel."""
        try:
            return fn(*args)
        except self.launcher.CudaCallError as exc:
            call_name, code = exc.args
            raise driver.cuda_error(call_name, code, f"kernel {self.kernel_name!r}") from None
        except self.launcher.DriverLoadError as exc:       # the first launch opens the driver
            raise driver.launcher_driver_error(str(exc)) from None

    def debug_checks(self, result: RunResult, stream: int) -> None:
        """Guard bands after the checked launch, then `--repeat`'s further launches."""
        memory = self.ready.memory
        if self.options.guard:                  # also with no buffers: guarded, nothing found
            from .debug.guards import GuardReport, check_guards
            result.debug.append(GuardReport(len(memory.guards), check_guards(memory.guards)))
        if self.options.repeat > 1:
            from .debug.repeat import repeat_and_compare

            def launch() -> None:
                self.guarded(self.ready.launch, stream)
                driver.stream_synchronize(stream, context=f"after kernel {self.kernel_name!r}")
            result.debug.append(repeat_and_compare(memory, self.plan, launch, self.options.repeat))

    def check_and_save(self, memory, result: RunResult) -> None:
        from .outputs import check_and_save
        done = check_and_save(self.spec, memory)
        result.checks.extend(done.checks)
        result.saved.extend(done.saved)
        result.stages.update(done.seconds)

    def time(self, launch, stream: int, l2: str):
        from .timing import TimingOptions, time_kernel
        bench = self.spec.bench
        options = TimingOptions(
            warmup_ms=self.options.warmup_ms if self.options.warmup_ms is not None else bench.warmup_ms,
            rep_ms=self.options.rep_ms if self.options.rep_ms is not None else bench.rep_ms,
            l2=l2, raw_events=self.options.raw_events)
        return self.guarded(time_kernel, launch, stream, self.session.timing_kernels(), options,
                            _progress if self.options.progress else None)


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty() and total >= 4 * 64:
        sys.stderr.write(f"\rtiming: {done}/{total} samples")
        if done == total:
            sys.stderr.write("\r" + " " * 40 + "\r")
        sys.stderr.flush()
