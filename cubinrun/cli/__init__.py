"""The command line. Each command lives in a module of this package and
imports only what it needs when it runs, so that `cubinrun --help` and the
commands that need no GPU start fast.

Data goes to stdout, diagnostics to stderr. A `CubinrunError` ends as one
line on stderr and its exit code (SPEC.md section 2); `--debug` shows the
traceback instead.
"""
from __future__ import annotations

import sys

import click

from ..errors import EXIT_USAGE, BuildError, CubinrunError
from . import binaries, device, launch, profile, repro, results, source

_debug = False


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cubinrun")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def cli(debug: bool) -> None:
    """Run one compiled CUDA kernel from a YAML spec: launch, check, time."""
    global _debug
    _debug = debug


for _command in (launch.launch, results.compare, results.plot, source.gen, device.props,
                 binaries.inspect, binaries.compile_command, binaries.init, profile.profile,
                 repro.repro):
    cli.add_command(_command)


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
