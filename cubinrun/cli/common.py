"""What several commands share: options, the console, argument checks."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import click

# ctx.meta key: `cubinrun --json CMD` (before the command) asks CMD for JSON.
JSON_BEFORE_COMMAND = "cubinrun.json"


class Flags:
    """Flags accepted before the command and after it alike (`cubinrun --debug
    launch` and `cubinrun launch --debug`): people type them in either place."""

    debug = False


def _set_debug(ctx, param, value) -> None:
    if value:
        Flags.debug = True


def _set_no_color(ctx, param, value) -> None:
    if value:           # through the environment, so rich, progress bars and workers agree
        os.environ["NO_COLOR"] = "1"


def everywhere_options() -> list[click.Option]:
    """--debug and --no-color, for the group and for every command."""
    return [click.Option(["--debug"], is_flag=True, expose_value=False, is_eager=True,
                         callback=_set_debug, help="Show tracebacks for errors."),
            click.Option(["--no-color"], is_flag=True, expose_value=False, is_eager=True,
                         callback=_set_no_color, help="No colours (as NO_COLOR=1).")]


def _json_flag(ctx, param, value) -> bool:
    return bool(value or ctx.meta.get(JSON_BEFORE_COMMAND))


set_option = click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
                          help="Override a var of the spec (repeatable).")
json_option = click.option("--json", "as_json", is_flag=True, callback=_json_flag,
                           help="Print one JSON document on stdout and nothing else there.")
ORDINAL = click.IntRange(0, 2**31 - 1)
device_option = click.option("--device", type=ORDINAL, default=None, metavar="N",
                             help="CUDA device ordinal (default 0).")
force_option = click.option("--force", is_flag=True, help="Overwrite the -o file if it exists.")


# The width of output that is not a terminal: wide enough for any line, since
# nothing there may be wrapped or cut.
UNWRAPPED_WIDTH = 1 << 16


def console(stderr: bool = False):
    """rich's console on stdout (or stderr). Piped or redirected, it never wraps
    or cuts a line: people copy paths and names out of logs, and rich would
    otherwise wrap at 80 columns. Colour follows the terminal, `NO_COLOR` and
    `--no-color`."""
    import sys

    from rich.console import Console

    out = Console(stderr=stderr, highlight=False)     # stdout is guarded: cli.stdout
    stream = sys.stderr if stderr else sys.stdout
    if not (hasattr(stream, "isatty") and stream.isatty()):
        out.width = UNWRAPPED_WIDTH
        out.soft_wrap = True
    return out


def complete_specs(ctx, param, incomplete: str) -> list:
    """Shell completion of a SPEC argument: the YAML files and folders that
    start with what was typed (a folder is a valid SPEC for launch, and the way
    to the specs in it). Hidden entries only when a dot was typed."""
    return _complete_files(incomplete, (".yaml", ".yml"))


def complete_results(ctx, param, incomplete: str) -> list:
    """Shell completion of a results file (compare, plot, --baseline): the
    JSON and JSON lines files and the folders on the way to them."""
    return _complete_files(incomplete, (".json", ".jsonl"))


def _complete_files(incomplete: str, suffixes: tuple[str, ...]) -> list:
    from click.shell_completion import CompletionItem
    folder, _, start = incomplete.rpartition("/")
    base = Path(folder + "/" if folder or incomplete.startswith("/") else ".")
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    out = []
    for entry in entries:
        name = entry.name
        if not name.startswith(start) or (name.startswith(".") and not start.startswith(".")):
            continue
        typed = f"{folder}/{name}" if folder or incomplete.startswith("/") else name
        if entry.is_dir():
            out.append(CompletionItem(typed + "/"))
        elif entry.suffix in suffixes:
            out.append(CompletionItem(typed))
    return out


def existing(path: str) -> Path:
    """`path` as a Path; a usage error (exit 2) when nothing is there."""
    from ..errors import UsageError
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file")
    return p


def current_arch() -> str:
    """The arch of device 0, or a clear request for --arch when there is none."""
    from ..gpu import driver
    from ..errors import CudaError, UsageError
    try:
        return driver.get_device(0).arch
    except CudaError as exc:
        raise UsageError(f"no GPU to target ({exc}); pass --arch, e.g. --arch sm_90") from None


def write_output(path, data: str | bytes, force: bool, option: str = "-o",
                 mode: int = 0o666) -> None:
    """`-o FILE`, the one rule: a regular file, never written through a link,
    an existing one kept unless --force (files.py); then one "wrote" line."""
    from ..files import write_output as write_file
    out = write_file(path, data, force, option, mode)
    sys.stderr.write(f"wrote {out}\n")


def one_run(spec_path: str, overrides: tuple[str, ...], device: int | None):
    """The spec at exactly one point, for commands that run or write one launch
    (profile, repro): (its plan, its overrides as NAME=VALUE words). A spec whose
    sweep has several points is a usage error asking for --set; device values
    come from device `device` (0), read only if the spec names one."""
    from ..gpu.props import device_values_of
    from ..pipeline.prepare import plan_one_point
    from ..specfile import parse_overrides
    plan, point = plan_one_point(spec_path, parse_overrides(overrides),
                                 device_values_of(device or 0))
    return plan, tuple(f"{k}={v}" for k, v in point.items())


def optional_value(args: list[str], option: str, takes: Callable[[str], bool],
                   default: str) -> list[str]:
    """`option` takes the next word as its value only when `takes(word)`, else
    `default`, so an option whose value may be left out cannot swallow a spec
    path. Every `option` becomes `option=VALUE`; words after `--` are left alone."""
    out: list[str] = []
    position = 0
    while position < len(args):
        word = args[position]
        position += 1
        if word == "--":
            out += args[position - 1:]
            break
        if word != option:
            out.append(word)
        elif position < len(args) and takes(args[position]):
            out.append(f"{option}={args[position]}")
            position += 1
        else:
            out.append(f"{option}={default}")
    return out

