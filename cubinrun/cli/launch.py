"""`cubinrun launch`: one spec, on the GPU or as a dry run."""
from __future__ import annotations

import sys

import click

from .common import console, device_option, json_option, set_option

SANITIZER_TOOLS = ["memcheck", "racecheck", "initcheck", "synccheck"]


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
@click.option("--no-guard", is_flag=True,
              help="No guard bands around the buffers (they catch writes past a buffer).")
@click.option("--repeat", type=click.IntRange(1, 1_000_000), default=1, metavar="N",
              help="Launch N times from the same inputs; fail unless every buffer is the "
              "same bit for bit.")
@click.option("--sanitize", type=click.Choice(SANITIZER_TOOLS), is_flag=False,
              flag_value="memcheck", default=None,
              help="Run once, untimed, under compute-sanitizer (memcheck by default); any "
              "finding fails.")
def launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
           raw_events, arch, no_guard, repeat, sanitize):
    """Build the launcher, load the kernel, make the args, launch, check, time."""
    from ..errors import SpecError
    try:
        _launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
                raw_events, arch, not no_guard, repeat, sanitize)
    except SpecError as error:          # found past loading (the binary, the device): locate it
        raise error.located(file=spec_path) from None


def _launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
            raw_events, arch, guard, repeat, sanitize):
    if dry_run:
        return _launch_dry(spec_path, overrides, as_json, arch)
    if sanitize:
        from .sanitize import launch_sanitized
        return launch_sanitized(spec_path, overrides, device, as_json, sanitize)
    from ..driver import DeviceOpening
    opening = DeviceOpening(device or 0)    # CUDA initialises while the spec and binary are read
    try:
        _launch_on(opening, spec_path, overrides, device, as_json, warmup, rep, l2, no_bench,
                   raw_events, guard, repeat)
    finally:
        opening.settle()                    # never exit with the driver mid-initialisation


def _launch_dry(spec_path, overrides, as_json, arch):
    from ..prepare import prepare
    from ..report import print_json, render_plan
    from ..spec import load_spec, parse_overrides
    prepared = prepare(load_spec(spec_path, parse_overrides(overrides)), arch=arch)
    if as_json:
        print_json(prepared.to_json())
    else:
        render_plan(prepared, console())


def _launch_on(opening, spec_path, overrides, device, as_json, warmup, rep, l2, no_bench,
               raw_events, guard, repeat):
    from ..spec import load_spec, parse_overrides
    spec = load_spec(spec_path, parse_overrides(overrides))
    from ..report import print_json, render_result
    from ..run import RunOptions, run_spec
    options = RunOptions(device=device, warmup_ms=warmup, rep_ms=rep, l2=l2,
                         bench=not no_bench, progress=not as_json, raw_events=raw_events,
                         guard=guard, repeat=repeat)
    result = run_spec(spec, options, opening)
    if as_json:
        print_json(result.to_json())
    else:
        render_result(result, console())
    sys.exit(result.exit_code)
