"""One spec's run on a GPU, the pipeline every run takes: a single launch, a
sweep, a worker process and a Ray actor alike.

on the host (`on_host`): plan_spec (read, plan once, check) -> inputs ->
prepare (binary, launcher); then on the device (`run_on_device`): ready
(kernel loaded, buffers filled) -> launch once and synchronise -> check and
save outputs -> debug checks -> time -> RunResult. `run_spec` is both; a
worker of `launch --processes` does the first while another process times.

A `Session` holds what runs on one device share: a multi-run command keeps
one per worker, so a sweep loads its binary, module and timing kernels once.
Who owns the device (runs.worker.Runner) hands the pipeline a `Devices`.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from ..gpu import driver
from ..plan.make import Plan
from ..specfile import Spec
from ..specfile.device_values import DeviceValues
from ..specfile.locate import located
from .prepare import Prepared, check_device, needs_device_target, plan_spec, prepare
from .result import RunOptions, RunResult


@dataclass
class Ready:
    """A kernel loaded, its buffers filled and its launch bound: `launch(stream)`
    queues one launch. `close()` frees the device memory."""
    prepared: Any
    kernel: Any                 # kernel.LoadedKernel
    memory: Any                 # buffers.DeviceMemory
    launch: Callable[[int], None]
    seconds: dict[str, float] = field(default_factory=dict)   # init, upload
    checkers: Any = None        # a Future: the checks' references being made (outputs.py)

    def close(self) -> None:
        self.memory.free()


class Session:
    """What the runs on one device share: the device (its primary context
    current), one stream, the timing kernels (with the event offset they measure
    once), binaries by source, loaded modules by content, device copies of
    the last run's inputs (gpu/input_copies.py) and of the last whole reference
    a check compared with on the device (gpu/device_data.py)."""

    def __init__(self, device: driver.Device):
        self.device = device
        self._stream: int | None = None
        self._timing = None
        from ..binary.load import Binaries
        self._binaries = Binaries()
        self._modules: dict[bytes, Any] = {}
        self._staging = None
        from ..gpu.input_copies import InputCopies
        self.input_copies = InputCopies()
        from ..gpu.device_data import KeptReference
        self.kept_reference = KeptReference()   # a whole reference on the device, run to run
        self.runs = 0               # made ready so far

    @property
    def stream(self) -> int:
        if self._stream is None:
            self._stream = driver.create_stream()
        return self._stream

    def timing_kernels(self):
        from ..gpu.timing import TimingKernels
        if self._timing is None:
            self._timing = TimingKernels(self.device)
        return self._timing

    def load_binary(self, spec: Spec, arch: str | None):
        """binary.load_binary, once per kernel (binary.load.Binaries)."""
        return self._binaries.load(spec, arch)

    def staging(self, largest: int):
        """Pinned staging slots big enough for buffers of `largest` bytes, kept from
        run to run: pinning tens of MiB costs milliseconds each time."""
        from ..gpu.transfer import Staging
        if self._staging is None or not self._staging.holds(largest):
            if self._staging is not None:
                self._staging.close()
            self._staging = Staging(largest)
        return self._staging

    def copies_for_this_run(self):
        """The kept inputs from the second run on: a session that runs once (a
        single launch) never pays device memory for copies."""
        self.runs += 1
        return self.input_copies if self.runs > 1 else None

    def load_module(self, cubin: bytes):
        import hashlib
        key = hashlib.blake2b(cubin, digest_size=16).digest()
        if key not in self._modules:
            self._modules[key] = driver.load_module(cubin, what=f"cubin for {self.device.arch}")
        return self._modules[key]

    def close(self) -> None:
        self.input_copies.close()
        self.kept_reference.close()
        from ..gpu.device_data import forget_modules
        forget_modules()
        if self._timing is not None:
            self._timing.close()
            self._timing = None
        if self._staging is not None:
            self._staging.close()
            self._staging = None


class Devices(Protocol):
    """The device side of a run, owned by its runner: the values a spec may name
    (sm_count...), whether the session is open yet, and the session itself
    (opening it, or waiting for it to open, when it is not)."""
    values: DeviceValues

    def is_open(self) -> bool: ...

    def open_session(self) -> Session: ...


def run_spec(path: str | Path, overrides: Mapping[str, str], options: RunOptions,
             devices: Devices) -> RunResult:
    """Run the spec at `path` with `overrides` (--set and the sweep point) on the
    runner's device: `on_host`, then `run_on_device`. Spec errors found anywhere
    on the way name the spec's file and the field's line."""
    return run_on_device(on_host(path, overrides, devices, options.check), options, devices)


@dataclass(frozen=True)
class HostSide:
    """What a run gets ready without touching the GPU: the plan, its inputs,
    the checks' references being made, and (when the device was not open, or
    `ahead`) the binary and launcher."""
    path: str | Path
    plan: Plan
    inputs: "Inputs"
    checkers: Any               # a Future (gpu/outputs.checkers_ahead) or None
    prepared: Prepared | None


def on_host(path: str | Path, overrides: Mapping[str, str], devices: Devices, check: bool,
            ahead: bool = False) -> HostSide:
    """The run's host side: with `check`, the checks' references made on a
    thread from the start (gpu/outputs.checkers_ahead); while CUDA is still
    starting, the binary and the launcher made first.

    `ahead`: a worker waiting for its turn on the GPU while another process
    times (runs/processes.py). The binary and launcher are made in any case,
    and inputs of at most AHEAD_INPUT_BYTES on this one thread, so the turn is
    the upload and the GPU's work; the references wait for the turn, since
    their threads would compete with the process timing now."""
    from ..gpu.buffers import make_inputs
    from ..gpu.device_data import load_nvrtc_ahead
    from ..gpu.outputs import checkers_ahead
    load_nvrtc_ahead()              # the device's data kernels need it soon
    with located(path):
        plan = plan_spec(path, overrides, devices.values)
        began = time.perf_counter()
        values = make_inputs(plan)
        if ahead and sum(v.nbytes for v in values) <= AHEAD_INPUT_BYTES:
            from ..gpu.device_data import drawn_on_device      # those the device draws itself
            values = [v if drawn_on_device(b, i, v) else v.made()
                      for i, (b, v) in enumerate(zip(plan.spec.buffers.values(), values))]
        inputs = Inputs(values, time.perf_counter() - began)
        checkers = checkers_ahead(plan.spec, values) if check and not ahead else None
        if ahead:                   # CUDA opened while the others took their turns
            session = devices.open_session()
            prepared = prepare(plan, session.device, load=session.load_binary)
        elif not devices.is_open() and not needs_device_target(plan.spec):
            prepared = prepare(plan)
        else:
            prepared = None
    return HostSide(path, plan, inputs, checkers, prepared)


# Inputs a worker makes before its turn (on_host's `ahead`): a few processes
# each hold one run's inputs at once, so large ones are made in the turn.
AHEAD_INPUT_BYTES = 512 << 20


def run_on_device(host: HostSide, options: RunOptions, devices: Devices) -> RunResult:
    """The run's device side: the kernel loaded, its buffers filled, launched,
    checked (references made now if `on_host` did not start them) and timed."""
    from ..gpu.outputs import checkers_ahead
    plan = host.plan
    with located(host.path):
        checkers = host.checkers
        if options.check and checkers is None:
            checkers = checkers_ahead(plan.spec, host.inputs.values)
        session = devices.open_session()
        ready = make_ready(plan, session, host.inputs, host.prepared, checkers,
                           guard=options.guard, repeat=options.repeat)
        try:
            return _Run(plan.spec, ready, session, options).execute()
        finally:
            ready.close()


@dataclass(frozen=True)
class Inputs:
    values: list                # every buffer's input (hostdata.InputValues), checked
    seconds: float = 0.0        # making them


def make_ready(plan: Plan, session: Session, inputs: Inputs, early: Prepared | None = None,
               checkers=None, guard: bool = False, repeat: int = 1) -> Ready:
    """The kernel loaded on the session's device and its buffers filled from
    `inputs`. `early`: the binary and launcher prepared before the device was
    open; `checkers`: the checks being made ahead; `guard`: guard bands around
    the buffers; `repeat`: the launches `--repeat` makes (room for run 1's
    buffers is checked before allocating)."""
    from ..gpu import buffers
    from ..gpu.arguments import launcher_values
    from ..gpu.kernel import load_kernel
    from ..plan.specialization import check_addresses
    device, spec = session.device, plan.spec
    if early is not None:
        prepared = early
        check_device(prepared, device)
    else:
        prepared = prepare(plan, device, load=session.load_binary)
    launcher = prepared.launcher
    kernel = load_kernel(prepared.cubin, prepared.kernel_name, device, plan,
                         module=session.load_module(prepared.cubin))
    from ..gpu import module_globals
    bound = module_globals.bind(spec, kernel.module, prepared.cubin)
    memory = buffers.allocate(plan, inputs.values, device.name, guard=guard, repeat=repeat,
                              staging=session.staging, module_globals=bound,
                              copies=session.copies_for_this_run())
    memory.kept_reference = session.kept_reference
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
    seconds = {"init": inputs.seconds + memory.seconds["init"],
               "upload": memory.seconds["upload"]}
    return Ready(prepared, kernel, memory, launch_once, seconds, checkers)


class _Run:
    def __init__(self, spec: Spec, ready: Ready, session: Session, options: RunOptions):
        self.spec, self.ready, self.options = spec, ready, options
        self.session, self.device = session, session.device
        self.plan = ready.prepared.plan
        self.launcher = ready.prepared.launcher
        self.kernel_name = ready.kernel.name

    def execute(self) -> RunResult:
        from ..gpu.props import peak_bandwidth_gbps, peak_fp32_tflops
        from ..gpu.stats import Summary
        from ..gpu.timers.noise import median_noise
        spec, plan, device, kernel = self.spec, self.plan, self.device, self.ready.kernel
        attr = lambda name: driver.device_attribute(device.handle, name)  # noqa: E731
        device_info = {
            "name": device.name, "ordinal": device.ordinal, "arch": device.arch,
            "peak_bandwidth_gbps": peak_bandwidth_gbps(attr("MEMORY_CLOCK_RATE"),
                                                       attr("GLOBAL_MEMORY_BUS_WIDTH")),
            "peak_fp32_tflops": peak_fp32_tflops(device.capability, attr("MULTIPROCESSOR_COUNT"),
                                                 attr("CLOCK_RATE")),
        }
        kernel_info = {"name": kernel.name, "cxx_name": self.ready.prepared.binary.kernel.cxx_name,
                       "cluster": list(plan.cluster) if plan.cluster else None,
                       **kernel.attributes}
        result = RunResult(spec, device_info, kernel_info, launched=plan.ctas > 0)
        result.stages.update(self.ready.seconds)
        stream = self.session.stream
        began = time.perf_counter()
        if plan.ctas > 0:
            self.guarded(self.ready.launch, stream)
            driver.stream_synchronize(stream, context=f"after kernel {kernel.name!r}")
        result.stages["launch"] = time.perf_counter() - began
        if self.options.check:
            self.check_and_save(self.ready.memory, result)
        if plan.ctas > 0:
            self.debug_checks(result, stream)
        if self.options.bench and plan.ctas > 0:
            result.l2 = "hot" if self.options.timer == "graph" else (self.options.l2 or spec.bench.l2)
            started = time.perf_counter()
            timed = self.time(self.ready.launch, stream, result.l2)
            result.timing_s = time.perf_counter() - started
            result.timing = Summary.from_samples(timed.samples_us)
            result.event_offset_us = timed.event_offset_us
            result.dropped_samples = timed.dropped
            result.sm_clock_mhz = timed.sm_clock_mhz
            result.throttled_samples = timed.throttled
            result.timer, result.stopped = timed.timer, timed.stopped
            result.launches_per_sample = timed.launches_per_sample
            result.graph_startup_us = timed.graph_startup_us
            result.noise = median_noise(timed.samples_us)
            if self.options.keep_samples:
                result.samples_us = timed.samples_us
        if self.options.energy and plan.ctas > 0:
            from ..gpu.energy import measure_energy
            result.energy = self.guarded(measure_energy, self.ready.launch, stream,
                                         self.device)
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
            from ..gpu.guards import GuardReport, check_guards
            result.debug.append(GuardReport(len(memory.guards), check_guards(memory.guards)))
        if self.options.repeat > 1:
            from ..debug.repeat import repeat_and_compare

            def launch() -> None:
                self.guarded(self.ready.launch, stream)
                driver.stream_synchronize(stream, context=f"after kernel {self.kernel_name!r}")
            result.debug.append(repeat_and_compare(memory, self.plan, launch, self.options.repeat))

    def check_and_save(self, memory, result: RunResult) -> None:
        from ..gpu.outputs import check_and_save
        done = check_and_save(self.spec, memory, self.ready.checkers)
        result.checks.extend(done.checks)
        result.saved.extend(done.saved)
        result.stages.update(done.seconds)

    def time(self, launch, stream: int, l2: str):
        from ..gpu.timers import time_kernel
        from ..gpu.timing import MIN_SAMPLES, TimingOptions
        bench, options = self.spec.bench, self.options
        warmup_ms = options.warmup_ms if options.warmup_ms is not None else bench.warmup_ms
        rep_ms = options.rep_ms if options.rep_ms is not None else bench.rep_ms
        timing = TimingOptions(
            warmup_ms=warmup_ms * options.budget_share, rep_ms=rep_ms * options.budget_share,
            l2=l2, raw_events=options.raw_events, timer=options.timer,
            max_noise=options.max_noise,
            min_samples=options.min_samples if options.min_samples is not None else MIN_SAMPLES)
        return self.guarded(time_kernel, launch, stream, self.session.timing_kernels(), timing,
                            _progress if options.progress else None)


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty() and total >= 4 * 64:
        sys.stderr.write(f"\rtiming: {done}/{total} samples")
        if done == total:
            sys.stderr.write("\r" + " " * 40 + "\r")
        sys.stderr.flush()
