"""The command line. Each command imports only what it needs, so that
`cubinrun --help` and the commands that need no GPU start fast.

Data goes to stdout, diagnostics to stderr. A `CubinrunError` ends as one
line on stderr and its exit code (SPEC.md section 2); `--debug` shows the
traceback instead.
"""
from __future__ import annotations

import sys

import click

from .errors import EXIT_USAGE, BuildError, CubinrunError

_debug = False


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cubinrun")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def cli(debug: bool) -> None:
    """Run one compiled CUDA kernel from a YAML spec: launch, check, time."""
    global _debug
    _debug = debug


set_option = click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
                          help="Override a var of the spec (repeatable).")
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON document on stdout and nothing else there.")
device_option = click.option("--device", type=int, default=None, metavar="N",
                             help="CUDA device ordinal (default 0).")


@cli.command()
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
    from .errors import SpecError
    try:
        _launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
                raw_events, arch)
    except SpecError as error:          # found past loading (the binary, the device): locate it
        raise error.located(file=spec_path) from None


def _launch(spec_path, overrides, device, as_json, dry_run, warmup, rep, l2, no_bench,
            raw_events, arch):
    if dry_run:
        return _launch_dry(spec_path, overrides, as_json, arch)
    from .driver import DeviceOpening
    opening = DeviceOpening(device or 0)    # CUDA initialises while the spec and binary are read
    try:
        _launch_on(opening, spec_path, overrides, device, as_json, warmup, rep, l2, no_bench,
                   raw_events)
    finally:
        opening.settle()                    # never exit with the driver mid-initialisation


def _launch_dry(spec_path, overrides, as_json, arch):
    from .prepare import prepare
    from .report import print_json, render_plan
    from .spec import load_spec, parse_overrides
    prepared = prepare(load_spec(spec_path, parse_overrides(overrides)), arch=arch)
    if as_json:
        print_json(prepared.to_json())
    else:
        render_plan(prepared, _console())


def _launch_on(opening, spec_path, overrides, device, as_json, warmup, rep, l2, no_bench,
               raw_events):
    from .spec import load_spec, parse_overrides
    spec = load_spec(spec_path, parse_overrides(overrides))
    from .run import RunOptions, run_spec
    from .report import print_json, render_result
    options = RunOptions(device=device, warmup_ms=warmup, rep_ms=rep, l2=l2,
                         bench=not no_bench, progress=not as_json, raw_events=raw_events)
    result = run_spec(spec, options, opening)
    if as_json:
        print_json(result.to_json())
    else:
        render_result(result, _console())
    sys.exit(result.exit_code)


@cli.command()
@click.argument("spec_path", metavar="[SPEC]", required=False, type=click.Path(dir_okay=False))
@click.option("--signature", "compact", metavar="TYPES",
              help='A signature instead of a spec, e.g. "*fp32,*fp32,i32".')
@click.option("--scratch", type=click.IntRange(0, 2), default=0,
              help="Trailing scratch pointer parameters (with --signature).")
@set_option
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Write the C source to a file.")
def gen(spec_path, compact, scratch, overrides, output):
    """Print the launcher C source for a spec or a signature."""
    from .launcher import generate_source
    from .signature import expand, parse_compact
    if (spec_path is None) == (compact is None):
        raise click.UsageError("give a SPEC or --signature, not both or neither")
    if compact is not None:
        leaf_types = [leaf.type for leaf in expand(parse_compact(compact))]
    else:
        from .spec import load_spec, parse_overrides
        spec = load_spec(spec_path, parse_overrides(overrides))
        leaf_types = [leaf.type for leaf in spec.leaves()]
        scratch = spec.launch.scratch_params
    source = generate_source(leaf_types, scratch)
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(source)
    elif sys.stdout.isatty():
        from rich.syntax import Syntax
        _console().print(Syntax(source, "c", theme="ansi_dark", background_color="default"))
    else:
        sys.stdout.write(source)


@cli.command()
@device_option
@json_option
def props(device, as_json):
    """Print the properties of every device (or of --device N)."""
    from .props import collect_all
    devices = collect_all(device)
    if as_json:
        from .report import print_json
        print_json({"devices": devices})
    else:
        from .report import render_props
        render_props(devices, _console())


@cli.command()
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--kernel", "kernel_name", metavar="NAME", help="Only this kernel.")
@json_option
def inspect(path, kernel_name, as_json):
    """Show what a cubin (or a fatbin's cubins) holds: arch, kernels, parameters."""
    from .cubin import load_cubins
    infos = load_cubins(_existing(path))
    if kernel_name:
        infos = [_only_kernel(info, kernel_name) for info in infos]
    if as_json:
        from .report import print_json
        print_json(infos[0].to_json() if len(infos) == 1
                   else {"cubins": [info.to_json() for info in infos]})
    else:
        from .inspect_view import render_inspect
        console = _console()
        for info in infos:
            render_inspect(info, console)


@cli.command("compile")
@click.argument("source", metavar="SRC.cu", type=click.Path(dir_okay=False))
@click.option("--arch", metavar="SM", help="Target, e.g. sm_90 (default: the current device).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Output cubin (default: SRC with .<arch>.cubin).")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Define a macro.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Add an include folder.")
@click.option("--option", "options", multiple=True, metavar="FLAG",
              help="Pass a flag to NVRTC (repeatable), e.g. --option=-lineinfo.")
@click.option("--name-expression", "name_expressions", multiple=True, metavar="EXPR",
              help="A template instantiation to compile and name, e.g. 'kern<float>'.")
def compile_command(source, arch, output, defines, include_dirs, options, name_expressions):
    """Compile CUDA C++ to a cubin with NVRTC (no GPU needed with --arch)."""
    from pathlib import Path

    from .nvrtc import compile_cuda
    path = _existing(source)
    arch = arch or _current_arch()
    macros = dict(d.split("=", 1) if "=" in d else (d, None) for d in defines)
    compiled = compile_cuda(path.read_text(), name=str(path), arch=arch, options=options,
                            defines=macros, include_dirs=include_dirs,
                            name_expressions=name_expressions)
    out = Path(output) if output else path.with_suffix(f".{arch}.cubin")
    out.write_bytes(compiled.cubin)
    if compiled.log.strip():
        sys.stderr.write(compiled.log.rstrip() + "\n")
    for expression, lowered in compiled.lowered_names.items():
        sys.stderr.write(f"{expression} -> {lowered}\n")
    sys.stderr.write(f"wrote {out} ({len(compiled.cubin)} bytes, {arch})\n")


@cli.command()
@click.argument("path", metavar="FILE.cubin", type=click.Path(dir_okay=False))
@click.option("--kernel", "kernel_name", metavar="NAME", help="Which kernel (default: the only one).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the spec to a file.")
def init(path, kernel_name, output):
    """Write a starter spec from what a cubin says (types need a human: see the TODOs)."""
    from pathlib import Path

    from .cubin import load_cubin
    from .starter import starter_spec
    cubin = _existing(path)
    info = load_cubin(cubin)
    target = Path(output) if output else None
    text = starter_spec(info, info.kernel(kernel_name), cubin,
                        target.parent if target else Path.cwd())
    if target:
        target.write_text(text)
        sys.stderr.write(f"wrote {target}\n")
    else:
        sys.stdout.write(text)


def _existing(path: str):
    from pathlib import Path

    from .errors import UsageError
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file")
    return p


def _only_kernel(info, name: str):
    from dataclasses import replace
    return replace(info, kernels=[info.kernel(name)])


def _current_arch() -> str:
    """The arch of device 0, or a clear request for --arch when there is none."""
    from . import driver
    from .errors import CudaError, UsageError
    try:
        return driver.get_device(0).arch
    except CudaError as exc:
        raise UsageError(f"no GPU to target ({exc}); pass --arch, e.g. --arch sm_90") from None


def _console(stderr: bool = False):
    from rich.console import Console
    return Console(stderr=stderr, highlight=False)


def _print_error(error: CubinrunError) -> None:
    if isinstance(error, BuildError) and error.log:
        sys.stderr.write(error.log.rstrip() + "\n")
    sys.stderr.write(f"error: {error}\n")


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="cubinrun", standalone_mode=False)
    except CubinrunError as error:
        if _debug:
            raise
        _print_error(error)
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code if error.exit_code else EXIT_USAGE)
    except click.exceptions.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(0)


if __name__ == "__main__":
    main()
