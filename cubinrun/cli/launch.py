"""`cubinrun launch`: one spec, on the GPU or as a dry run."""
from __future__ import annotations

import sys

import click

from .common import console, device_option, json_option, set_option


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False))
@set_option
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
@click.option("--arch", metavar="SM", help="Target for compiling source:/ptx: kernels in a "
              "dry run without a GPU, e.g. sm_90.")
def launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
           raw_events, arch):
    """Build the launcher, load the kernel, make the args, launch, check, time."""
    from ..errors import SpecError
    try:
        _launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
                raw_events, arch)
    except SpecError as error:          # found past loading (the binary, the device): locate it
        from ..spec.locate import locate
        raise locate(error, spec_path) from None


def _launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
            raw_events, arch):
    if dry_run:
        return _launch_dry(spec_path, overrides, as_json, arch)
    from ..driver import DeviceOpening
    opening = DeviceOpening(device or 0)    # CUDA initialises while the spec and binary are read
    try:
        _launch_on(opening, spec_path, overrides, device, as_json, warmup, rep, l2, no_bench,
                   raw_events)
    finally:
        opening.settle()                    # never exit with the driver mid-initialisation


def _launch_dry(spec_path, overrides, as_json, arch):
    from ..prepare import prepare
    from ..report import print_json, render_plan
    from ..spec import load_spec, parse_overrides
    if arch is not None:
        from ..binary.nvrtc import parse_arch
        parse_arch(arch)
    spec = load_spec(spec_path, parse_overrides(overrides))
    prepared = prepare(spec, arch=arch)
    _check_data(spec)
    if as_json:
        print_json(prepared.to_json())
    else:
        render_plan(prepared, console())


def _check_budgets(**budgets):
    from ..errors import UsageError
    from ..limits import MAX_BENCH_MS
    for name, value in budgets.items():
        if value is not None and not 0 < value <= MAX_BENCH_MS:     # NaN and infinity too
            raise UsageError(f"--{name} must be a positive number of ms up to {MAX_BENCH_MS}, "
                             f"got {value}")


def _check_data(spec):
    """The host data and check references the spec describes, checked without
    making them: a dry run evaluates them, and a launch finds a bad reference
    before the kernel runs, not after."""
    from ..check import check_reference
    from ..hostdata import check_init
    for buffer in spec.buffers.values():
        check_init(buffer)
    env = spec.expression_env()
    for check in spec.checks:
        check_reference(check, spec.buffers[check.output], spec.buffers, env)


def _launch_on(opening, spec_path, overrides, device, as_json, warmup, rep, l2, no_bench,
               raw_events):
    from ..spec import load_spec, parse_overrides
    _check_budgets(warmup=warmup, rep=rep)
    spec = load_spec(spec_path, parse_overrides(overrides))
    _check_data(spec)                   # a bad check.expect is found before the launch
    from ..report import print_json, render_result
    from ..run import RunOptions, run_spec
    options = RunOptions(device=device, warmup_ms=warmup, rep_ms=rep, l2=l2,
                         bench=not no_bench, progress=not as_json, raw_events=raw_events)
    result = run_spec(spec, options, opening)
    try:
        if as_json:
            print_json(result.to_json())
        else:
            render_result(result, console())
        sys.stdout.flush()
    except BrokenPipeError:             # the reader left: the run's exit code still counts
        from . import silence_stdout
        silence_stdout()
    sys.exit(result.exit_code)
