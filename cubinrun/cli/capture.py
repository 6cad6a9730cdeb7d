"""`cubinrun capture [OPTIONS] -o DIR -- CMD [ARGS]`: run a program unchanged
and turn the kernels it launches into specs that run and check themselves
(docs/capture.md). The work is in cubinrun/capture/."""
from __future__ import annotations

import sys

import click


class _CaptureCommand(click.Command):
    """An option capture does not know, once the program's name has come, is the
    program's own (`capture -o DIR python3 -c ...`): the error says to put `--`
    before the program, which click's own line (`No such option: -c`) leaves out."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            exc.message = (f"{exc.message.rstrip('.')}: put `--` before the program, whose "
                           "options are its own: cubinrun capture -o DIR -- CMD [ARGS]")
            raise


@click.command(cls=_CaptureCommand)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED,
                metavar="-- CMD [ARGS]...")
@click.option("-o", "--output", "folder", required=True, metavar="DIR", type=click.Path(),
              help="The folder to write: one spec per captured launch, its data, capture.json.")
@click.option("--force", is_flag=True, help="Replace DIR when it holds an earlier capture.")
@click.option("--kernel", "kernel", metavar="REGEX",
              help="Capture only kernels whose name this regular expression matches.")
@click.option("--limit", type=click.IntRange(min=0), metavar="N",
              help="Capture at most N launches.")
@click.option("--skip", type=click.IntRange(min=0), default=0, metavar="N",
              help="Leave out the first N launches that would be captured.")
@click.option("--max-bytes", "max_bytes", metavar="SIZE[,TOTAL]", default="4G,32G",
              show_default=True,
              help="Memory a launch may save (its buffers before and after), and all launches "
              "together: bytes or K, M, G, T.")
@click.option("--triton/--no-triton", default=True, show_default=True,
              help="Hook Triton's launcher in Python programs.")
@click.option("--cupti/--no-cupti", default=None,
              help="Capture every CUDA launch through CUPTI (default: when the CUPTI "
              "library can be built; needs the capture extra).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Replay the specs (cubinrun launch --no-bench) and record in capture.json "
              "which pass.")
def capture(command, folder, force, kernel, limit, skip, max_bytes, triton, cupti, verify):
    """Run CMD as it is and write a folder of specs, one per distinct launch it
    makes (the first launch of each kernel, grid, block and argument sizes):
    the kernel, its inputs as they were just before the launch and a check of
    what it changed. `cubinrun launch DIR` replays and checks them.

    The program's output is its own; capture's lines go to stderr. The exit
    code is the program's."""
    from pathlib import Path

    from ..capture.selection import Selection, parse_bytes
    from ..capture.session import (CaptureOptions, capture as run_capture, check_output_folder,
                                   describe, exit_line)
    from ..gpu import driver
    from .common import Flags
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise click.UsageError("no program given: cubinrun capture -o DIR -- CMD [ARGS]")
    per_launch, total = parse_bytes(max_bytes)
    selection = Selection(kernel, limit, skip, per_launch, total)
    check_output_folder(Path(folder), force)     # a usage error on any machine, GPU or not
    driver.init()                       # no GPU: one line now, not a program run for nothing
    options = CaptureOptions(tuple(command), Path(folder), selection, force, triton, cupti,
                             Flags.debug, verify)
    say = lambda line: sys.stderr.write(line + "\n")     # noqa: E731
    summary = run_capture(options, say)
    say(describe(summary, Path(folder)))
    if summary.exit_code:
        say(exit_line(command, summary.exit_code))
        sys.exit(summary.exit_code)
