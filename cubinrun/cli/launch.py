"""`cubinrun launch`: one or many specs (files, folders, sweeps, --axis), on
the GPU or as a dry run, with result files, plots and a baseline gate.

One run keeps the single-spec behaviour exactly: it runs in this process
(CUDA starting on a thread while the spec is read), prints the full report
or the section-2 JSON, and an error ends as one line. Several runs go to a
worker process (runs.executor) that starts CUDA once; each error becomes a
line on stderr and a row of the final table, and the exit code is the most
severe of all runs. Guard bands and `--repeat` travel in RunOptions to
wherever the runs execute; `--sanitize` runs every run in turn under
compute-sanitizer instead (runs.sanitized), one cubinrun process each.
`--devices` spreads the runs over worker processes, one per GPU
(runs.devices), and `--ray` over Ray actors (runs.ray_backend); the results,
files and exit codes are those of the same runs on one worker.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

import click

from ..limits import MAX_PROCESSES, MAX_REPEAT, MAX_SAMPLES
from .common import (complete_results, complete_specs, console, device_option, json_option,
                     optional_value, set_option)
from .sanitize import TOOLS, optional_tool


@dataclass(frozen=True)
class LaunchArgs:
    specs: tuple[str, ...]
    overrides: tuple[str, ...]
    axes: tuple[str, ...]
    device: int | None
    as_json: bool
    dry_run: bool
    warmup: float | None
    rep: float | None
    l2: str | None
    no_bench: bool
    raw_events: bool
    arch: str | None
    fail_fast: bool
    jsonl: str | None
    append: bool
    csv: str | None
    markdown: str | None
    junit: str | None
    samples: bool
    plot: str | None
    baseline: str | None
    threshold: str
    ignore_device: bool
    props: str | None = None
    guard: bool = True
    repeat: int = 1
    sanitize: str | None = None             # a compute-sanitizer tool
    devices: str | None = None
    workers_per_gpu: int = 1
    mixed_devices: bool = False
    ray: str | None = None
    timer: str = "events"
    max_noise: str | None = None            # as given: "0.5%" or "0.005"
    min_samples: int | None = None
    energy: bool = False
    constraints: tuple[str, ...] = ()       # --constraint: expressions over vars
    processes: int = 1                      # --processes: fresh processes each run is timed in

    @property
    def spread(self) -> bool:
        """Runs go to workers on chosen GPUs (--devices) or a cluster (--ray)."""
        return self.devices is not None or self.ray is not None


class _LaunchCommand(click.Command):
    """`--sanitize` takes a tool, and `--ray` an address, only when the next word
    is one (SPEC... follows)."""

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, optional_address(optional_tool(args)))


_RAY_ADDRESS = re.compile(r"(auto|local|(ray|https?)://\S+|[\w.\-\[\]:]+:\d+)")


def optional_address(args: list[str]) -> list[str]:
    """`--ray` takes the next word as its address only when it looks like one (auto,
    local, HOST:PORT, a URL), so `--ray configs/x.yaml` starts a local cluster for
    that spec."""
    return optional_value(args, "--ray", lambda word: bool(_RAY_ADDRESS.fullmatch(word)),
                          "local")


@click.command(cls=_LaunchCommand)
@click.argument("specs", metavar="SPEC...", nargs=-1, required=True, type=click.Path(),
                shell_complete=complete_specs)
@set_option
@click.option("--axis", "axes", multiple=True, metavar="AXIS",
              help="Sweep a var, nvbench's grammar: 'N=[1024,4096]', 'N=[2:8:2]', "
              "'N[pow2]=[16:28:2]', 'K=[name1,name2]' (repeatable; replaces a spec's axis of "
              "that name).")
@click.option("--constraint", "constraints", multiple=True, metavar="EXPR",
              help="Run only the sweep's points where EXPR over vars is true, e.g. "
              "'BX * BY <= 1024' (repeatable; added to the spec's constraints). Others are "
              "listed as skipped.")
@device_option
@json_option
@click.option("--dry-run", is_flag=True,
              help="Parse, validate, build the launcher and print the plan; no GPU needed.")
@click.option("--warmup", type=float, default=None, metavar="MS", help="Warm-up budget in ms.")
@click.option("--rep", type=float, default=None, metavar="MS", help="Timing budget in ms.")
@click.option("--l2", type=click.Choice(["cold", "hot"]), default=None,
              help="Flush L2 before each sample (cold, default) or not (hot).")
@click.option("--no-bench", is_flag=True, help="Launch and check once; do not time.")
@click.option("--raw-events", is_flag=True,
              help="Report event-pair times as measured, without subtracting the event "
              "pair's own offset (calibrated on an empty kernel).")
@click.option("--timer", type=click.Choice(["events", "cupti", "graph"]), default="events",
              show_default=True,
              help="events: event pairs, their offset subtracted; cupti: the profiler's "
              "kernel records (needs cubinrun[cupti]); graph: launches replayed from a "
              "CUDA graph, time per launch plus the start-up a graph hides (hot L2), for "
              "kernels shorter than their launch.")
@click.option("--max-noise", metavar="PCT", help="Stop sampling once the median's relative "
              "noise is below PCT (e.g. 0.5%); the budget (--rep) stays the ceiling.")
@click.option("--min-samples", type=click.IntRange(1, MAX_SAMPLES), default=None, metavar="N",
              help="Take at least N samples (default 10).")
@click.option("--processes", type=click.IntRange(1, MAX_PROCESSES), default=1,
              show_default=True, metavar="N",
              help="Time each run in N fresh processes, one after another, each with 1/N of "
              "the budget, and keep each process's median: what a CI gate needs, since a "
              "small kernel's median moves between processes (compare judges between them).")
@click.option("--energy", is_flag=True, help="Also measure joules per launch, average watts "
              "and SM clock from NVML's energy counter over ~1 s of back-to-back launches "
              "(needs cubinrun[energy]).")
@click.option("--arch", metavar="SM", help="Target for compiling source:/ptx: kernels in a "
              "dry run without a GPU, e.g. sm_90 (or kernel.arch in the spec).")
@click.option("--props", "props_file", metavar="FILE", help="Device values (sm_count, "
              "l2_bytes, ...) for a dry run, from a saved `cubinrun props --json`; without it "
              "--arch gives a known GPU's.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first run that does not succeed.")
@click.option("--jsonl", metavar="PATH", help="Write one result per line as each run ends "
              "(- for stdout); the file is written afresh.")
@click.option("--append", is_flag=True, help="Add to what the --jsonl file holds instead "
              "of writing it afresh.")
@click.option("--csv", "csv_path", metavar="PATH", help="Write the results as CSV.")
@click.option("--markdown", metavar="PATH", help="Write a Markdown table; "
              "$GITHUB_STEP_SUMMARY is appended to, as GitHub expects.")
@click.option("--junit", metavar="PATH", help="Write JUnit XML (check failures and "
              "regressions are failures, spec/build/CUDA errors are errors).")
@click.option("--samples", is_flag=True, help="Keep every timing sample in the JSON results "
              "(timing.samples_us), for compare's rank test.")
@click.option("--plot", metavar="PATH", help="Plot the sweep to PATH.png or PATH.svg "
              "(needs cubinrun[plot]).")
@click.option("--baseline", metavar="FILE", shell_complete=complete_results,
              help="Compare each run with FILE's (JSON or JSONL) "
              "as it ends; exit 5 when one is SLOWER.")
@click.option("--threshold", default="3%", show_default=True, metavar="PCT",
              help="With --baseline: the smallest change that counts.")
@click.option("--ignore-device", is_flag=True,
              help="With --baseline: compare with results from another GPU model.")
@click.option("--no-guard", is_flag=True,
              help="No guard bands around the buffers (they catch writes past a buffer).")
@click.option("--repeat", type=click.IntRange(1, MAX_REPEAT), default=1, metavar="N",
              help="Launch N times from the same inputs; fail unless every buffer is the "
              "same bit for bit.")
@click.option("--sanitize", type=click.Choice(TOOLS), is_flag=False, flag_value="memcheck",
              default=None,
              help="Run each spec once, untimed, under compute-sanitizer (memcheck when no "
              "tool is named); any finding fails.")
@click.option("--devices", metavar="LIST|all", help="Spread the runs over these GPUs (PCI bus "
              "order, e.g. 0,1 or all), one worker process each; 0,0 is two workers "
              "sharing GPU 0.")
@click.option("--workers-per-gpu", type=int, default=1, show_default=True, metavar="N",
              help="With --devices or --ray: N workers share each GPU.")
@click.option("--mixed-devices", is_flag=True,
              help="With --devices or --ray: allow different GPU models in one command.")
@click.option("--ray", "ray", metavar="[ADDRESS]", help="Run on Ray actors holding a GPU "
              "each: an existing cluster (auto, HOST:PORT, ray://HOST:PORT) or, without "
              "ADDRESS, a local one started for the command (needs cubinrun[ray]).")
def launch(specs, overrides, axes, constraints, device, as_json, dry_run, warmup, rep, l2,
           no_bench, raw_events, timer, max_noise, min_samples, energy, arch, props_file,
           fail_fast, jsonl, append, csv_path, markdown, junit, samples,
           plot, baseline, threshold, ignore_device, no_guard, repeat, sanitize, devices,
           workers_per_gpu, mixed_devices, ray, processes):
    """Build the launcher, load the kernel, make the args, launch, check, time.

    SPEC may be several spec files and folders (their *.yaml); every spec and
    every point of its sweep runs, with CUDA started once (per worker with
    --devices or --ray)."""
    from ..errors import CudaError
    from ..runs.outcome import NO_GPU_HINT, no_gpu
    args = LaunchArgs(specs, overrides, axes, device, as_json, dry_run, warmup, rep, l2,
                      no_bench, raw_events, arch, fail_fast, jsonl, append, csv_path, markdown,
                      junit, samples, plot, baseline, threshold, ignore_device, props_file,
                      guard=not no_guard, repeat=repeat, sanitize=sanitize, devices=devices,
                      workers_per_gpu=workers_per_gpu, mixed_devices=mixed_devices, ray=ray,
                      timer=timer, max_noise=max_noise, min_samples=min_samples, energy=energy,
                      constraints=constraints, processes=processes)
    try:
        _launch(args)
    except CudaError as error:
        if not no_gpu(error):
            raise
        raise CudaError(f"{error}; {NO_GPU_HINT}", call=error.call) from None


def _launch(args: LaunchArgs) -> None:
    from ..runs.expand import expand
    from ..specfile import parse_overrides
    args = _untimed_in_a_dry_run(args)
    _check_outputs(args)
    _check_numbers(args)
    _check_timer(args)
    _check_spread(args)
    baseline = _read_baseline(args)
    tasks = expand(args.specs, parse_overrides(args.overrides), args.axes, args.constraints)
    if args.dry_run:
        from .dry_run import dry_run
        sys.exit(dry_run(tasks, args))
    sys.exit(_run(tasks, args, baseline))


def _check_outputs(args: LaunchArgs) -> None:
    from ..errors import UsageError
    if args.jsonl == "-" and args.as_json:
        raise UsageError("--json and --jsonl - both want stdout: give --jsonl a file")
    stdout_files = [flag for flag, path in (("--csv", args.csv), ("--markdown", args.markdown),
                                            ("--junit", args.junit)) if path == "-"]
    if stdout_files and (args.as_json or args.jsonl == "-" or len(stdout_files) > 1):
        raise UsageError(f"{stdout_files[0]} - : only one output may go to stdout")
    if args.append and (not args.jsonl or args.jsonl == "-"):
        raise UsageError("--append adds to a --jsonl file: give --jsonl PATH")
    if args.props and not args.dry_run:
        raise UsageError("--props describes a device for --dry-run; a launch reads its device")
    if args.sanitize:
        if args.dry_run:
            raise UsageError("--dry-run launches nothing to sanitize")
        if args.baseline or args.plot:
            raise UsageError("--sanitize runs untimed: no --baseline or --plot")
        if args.repeat > 1:
            raise UsageError("--sanitize checks the first launch only: no --repeat")
    if args.plot:
        from ..results.plot import check_path, require_matplotlib
        check_path(args.plot)
        require_matplotlib()
    _check_result_files(args)


def _untimed_in_a_dry_run(args: LaunchArgs) -> LaunchArgs:
    """A dry run times nothing, so --plot and --baseline have nothing to do: they
    are left out with a note, and a CI job's command line takes --dry-run as it is
    (the baseline file is not even read: a first job has none)."""
    from dataclasses import replace
    ignored = [flag for flag, value in (("--plot", args.plot), ("--baseline", args.baseline))
               if value]
    if not args.dry_run or not ignored:
        return args
    sys.stderr.write(f"note: --dry-run times nothing: {' and '.join(ignored)} left out\n")
    return replace(args, plot=None, baseline=None)


def _check_result_files(args: LaunchArgs) -> None:
    """Result files are regular files in a folder that exists: a FIFO, device
    or folder named, or a missing folder, is refused before any run, not
    found (or hung on) after the last. (They are written afresh: no --force.)"""
    from ..files import check_output, named
    for flag, path in (("--jsonl", args.jsonl), ("--csv", args.csv), ("--markdown", args.markdown),
                       ("--junit", args.junit), ("--plot", args.plot)):
        named(path, flag)
        if path and path != "-":
            check_output(path, True, flag)


def _check_numbers(args: LaunchArgs) -> None:
    """--arch, the timing budgets (by the rule of the spec's bench: fields) and
    --threshold, before any spec is read, used or not."""
    from ..errors import UsageError
    from ..specfile.model import budget_problem
    from ..text import parse_fraction
    if args.arch is not None:
        from ..binary.nvrtc import parse_arch
        parse_arch(args.arch)
    for name, value in (("warmup", args.warmup), ("rep", args.rep)):
        if value is not None and (problem := budget_problem(value)):
            raise UsageError(f"--{name} {problem}")
    parse_fraction(args.threshold, "--threshold")  # compare.parse_threshold, without importing it
    max_noise(args)


def _check_timer(args: LaunchArgs) -> None:
    from ..errors import UsageError
    if args.timer == "graph" and args.l2 == "cold":
        raise UsageError("--timer graph replays launches back to back: L2 stays hot "
                         "(leave out --l2 cold)")
    if args.timer == "cupti" and args.raw_events:
        raise UsageError("--raw-events keeps the event pair's offset: --timer cupti uses no "
                         "event pairs")
    if args.no_bench and (args.timer != "events" or args.max_noise or args.min_samples):
        raise UsageError("--no-bench times nothing: --timer, --max-noise and --min-samples "
                         "do not apply")
    if args.sanitize and (args.timer != "events" or args.max_noise or args.min_samples
                          or args.energy):
        raise UsageError("--sanitize runs untimed: --timer, --max-noise, --min-samples and "
                         "--energy do not apply")


def max_noise(args: LaunchArgs) -> float | None:
    """--max-noise as a fraction above 0."""
    from ..errors import UsageError
    from ..text import parse_fraction
    if args.max_noise is None:
        return None
    value = parse_fraction(args.max_noise, "--max-noise")
    if value == 0:
        raise UsageError(f"--max-noise {args.max_noise!r}: must be above 0% (no run is "
                         "noiseless; the budget alone is --rep)")
    return value


def _check_spread(args: LaunchArgs) -> None:
    from ..errors import UsageError
    if args.devices is not None and args.ray is not None:
        raise UsageError("--devices and --ray: choose one (a Ray cluster picks its own GPUs)")
    if args.spread and args.device is not None:
        raise UsageError("--device picks one GPU; with --devices or --ray leave it out")
    if args.spread and args.dry_run:
        raise UsageError("--dry-run needs no GPU: --devices and --ray do not apply")
    if args.spread and args.sanitize:
        raise UsageError("--sanitize runs each run in its own process on one GPU: "
                         "--devices and --ray do not apply")
    if not args.spread and (args.workers_per_gpu != 1 or args.mixed_devices):
        raise UsageError("--workers-per-gpu and --mixed-devices go with --devices or --ray")
    if args.processes > 1 and (args.spread or args.sanitize or args.no_bench):
        flag = ("--devices" if args.devices is not None else "--ray" if args.ray is not None
                else "--sanitize" if args.sanitize else "--no-bench")
        raise UsageError(f"--processes {args.processes} times each run in that many processes on "
                         f"one GPU: {flag} does not go with it")


def _executor(tasks, args: LaunchArgs, options):
    """Who runs the tasks: this process (one run), a worker process, workers on
    --devices, or Ray actors."""
    from ..runs.executor import InlineExecutor, ProcessExecutor
    runnable = sum(1 for t in tasks if t.runnable)
    if args.processes > 1:
        from ..runs.processes import ProcessesExecutor
        return ProcessesExecutor(options, args.processes)
    if args.ray is not None:
        from ..runs.ray_backend import RayExecutor
        return RayExecutor(options, args.ray, args.workers_per_gpu, args.mixed_devices,
                           limit=runnable)
    if args.devices is not None:
        from ..runs.devices import placements
        return ProcessExecutor(options, placements(args.devices, args.workers_per_gpu,
                                                   args.mixed_devices, limit=runnable))
    return InlineExecutor(options) if len(tasks) == 1 else ProcessExecutor(options)


def _notes(executor, options) -> list[str]:
    from ..runs.devices import sharing_note
    notes = list(getattr(executor, "notes", []))
    tags = executor.tags() if hasattr(executor, "tags") else \
        [p.tag for p in getattr(executor, "placements", [])]
    shared = sharing_note(tags) if options.bench else None
    return notes + ([shared] if shared else [])


def _read_baseline(args: LaunchArgs):
    if not args.baseline:
        return None
    from ..results.compare import Baseline, parse_threshold
    from ..results.reader import iter_results
    return Baseline(iter_results(args.baseline, slim=False), parse_threshold(args.threshold),
                    args.ignore_device, args.baseline)


def _run(tasks, args: LaunchArgs, baseline) -> int:
    from ..errors import EXIT_OK, EXIT_REGRESSION
    from ..results.writers import JsonLines
    from ..pipeline.result import RunOptions
    from ..runs.outcome import most_severe
    from ..runs.progress import Progress
    single = len(tasks) == 1
    inline = single and not args.spread and args.processes == 1    # the run's own objects are at hand
    options = RunOptions(device=args.device, warmup_ms=args.warmup, rep_ms=args.rep, l2=args.l2,
                         bench=not args.no_bench,
                         progress=inline and not args.as_json and args.jsonl != "-",
                         raw_events=args.raw_events,
                         keep_samples=args.samples or baseline is not None,
                         guard=args.guard, repeat=args.repeat, timer=args.timer,
                         max_noise=max_noise(args), min_samples=args.min_samples,
                         energy=args.energy)
    started = time.perf_counter()
    jsonl = JsonLines(args.jsonl, args.append) if args.jsonl else None   # refused before workers
    if args.sanitize:
        from ..runs.sanitized import SanitizerExecutor
        executor = SanitizerExecutor(args.sanitize, args.device)
    else:
        executor = _executor(tasks, args, options)
    progress = Progress(len(tasks), enabled=None if not single else False)
    records, results = [], []
    said_no_gpu = False
    try:
        for note in _notes(executor, options):
            progress.print(f"note: {note}")
        progress.running(tasks[0].label)
        for position, record in enumerate(executor.run(tasks, _stopper(args.fail_fast))):
            if baseline is not None and record.result and record.result.get("timing"):
                comparison = baseline.compare(record.to_json())
                record.compare = comparison.to_json()
                if comparison.verdict == "SLOWER" and record.exit_code == EXIT_OK:
                    record.exit_code = EXIT_REGRESSION
            result = record.to_json()
            if not args.samples and result.get("timing"):
                result["timing"].pop("samples_us", None)
                result["timing"].pop("sm_clocks_mhz", None)
            records.append(record)
            results.append(result)
            if jsonl:
                jsonl.write(result)
            progress.advance()
            if position + 1 < len(tasks):
                progress.running(tasks[position + 1].label)
            if record.error and not inline and not (record.no_gpu and said_no_gpu):
                if record.log and record.error_type == "internal":
                    progress.print(record.log.rstrip())
                progress.print(_no_gpu_line(record, len(tasks)) if record.no_gpu
                               else record.error_line())
                said_no_gpu = said_no_gpu or record.no_gpu
    finally:
        progress.close()
        executor.close()
        if jsonl:
            jsonl.close()
    exit_code = most_severe(r.exit_code for r in records)
    _write_outputs(records, results, exit_code, len(tasks) - len(records),
                   time.perf_counter() - started, args, single)
    if inline and records[0].exception is not None:
        raise records[0].exception      # one run: the error line exactly as before
    return exit_code


def _no_gpu_line(record, runs: int) -> str:
    """No driver or device: said once for the whole command, not once a run."""
    from ..runs.outcome import NO_GPU_HINT
    every = f" (the same for all {runs} runs)" if runs > 1 else ""
    return f"error: {record.error}{every}; {NO_GPU_HINT}"


def _stopper(fail_fast: bool):
    return (lambda record: record.exit_code != 0) if fail_fast else (lambda record: False)


def _write_outputs(records, results, exit_code, not_run, wall_s, args: LaunchArgs,
                   single: bool) -> None:
    from .report import print_json, render_result
    from ..results.table import render_summary
    from ..results.writers import json_document, summarize, write_files
    summary = summarize(results, exit_code, not_run, wall_s)
    write_files(results, summary, args.csv, args.markdown, args.junit)
    if args.plot:
        from ..results.plot import plot_results
        plot_results(results, args.plot)
    if args.as_json:
        print_json(json_document(results, summary, single=single))
    elif args.jsonl == "-" or "-" in (args.csv, args.markdown, args.junit):
        pass                                    # stdout carries that file
    elif single and records[0].live is not None and args.sanitize:
        from .sanitize import render
        render(records[0].live, console())
    elif single and records[0].live is not None:
        render_result(records[0].live, console())
        if records[0].compare:
            _print_comparison(records[0].compare)
    elif not single or args.spread or args.processes > 1 or records[0].outcome:
        render_summary(results, summary, wide_console())


def wide_console():
    """stdout for the table of runs (console() never wraps it when piped)."""
    return console()


def _print_comparison(compare: dict) -> None:
    text = f"vs baseline: {compare['verdict']}"
    if compare.get("ratio") is not None:
        text += f" {compare['ratio']:.3f}x"
    if compare.get("low") is not None and compare.get("high") is not None:
        text += f" (95% interval {compare['low']:.3f}-{compare['high']:.3f})"
    if compare.get("reason"):
        text += f"; {compare['reason']}"
    if compare.get("energy_ratio") is not None:
        text += f"; energy {compare['energy_verdict']} {compare['energy_ratio']:.3f}x"
    console().print(text, markup=False)
