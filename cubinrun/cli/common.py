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
device_option = click.option("--device", type=click.IntRange(0, 2**31 - 1), default=None,
                             metavar="N",
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

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits with 1 here, the code of a failed check: let the
            # command decide (launch keeps its run's code, others exit 0).
            raise BrokenPipeError

    out = _Console(stderr=stderr, highlight=False)
    stream = sys.stderr if stderr else sys.stdout
    if not (hasattr(stream, "isatty") and stream.isatty()):
        out.width = UNWRAPPED_WIDTH
        out.soft_wrap = True
    return out


def complete_specs(ctx, param, incomplete: str) -> list:
    """Shell completion of a SPEC argument: the YAML files and folders that
    start with what was typed (a folder is a valid SPEC for launch, and the way
    to the specs in it). Hidden entries only when a dot was typed."""
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
        elif entry.suffix in (".yaml", ".yml"):
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
    from ..errors import UsageError
    from ..gpu.props import device_values_of
    from ..pipeline.prepare import plan_spec
    from ..runs.expand import expand, point_text
    from ..specfile import parse_overrides
    tasks = expand([spec_path], parse_overrides(overrides))
    task = tasks[0]
    if task.error is not None:
        raise task.error
    if len(tasks) == 1 and task.skipped is not None:
        raise UsageError(f"{spec_path}: the point fails the constraint {task.skipped}: "
                         f"pick another with --set")
    if len(tasks) > 1:
        raise UsageError(f"{spec_path}: its sweep has {len(tasks)} points and this command runs "
                         f"one: pick it with --set (e.g. {point_text(task.point)})")
    plan = plan_spec(spec_path, task.overrides, device_values_of(device or 0))
    return plan, tuple(f"{k}={v}" for k, v in task.overrides.items())


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


def silence_stdout() -> None:
    """Point stdout at the null device, so that Python's own flush at exit does
    not fail again on a closed pipe."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass                                # not a real file (a test's capture)
