"""The command line. Each command lives in a module of this package and
imports only what it needs when it runs, so that `cubinrun --help` and the
commands that need no GPU start fast.

Data goes to stdout, diagnostics to stderr. A `CubinrunError` ends as one
line on stderr and its exit code (docs/commands.md); `--debug` shows the
traceback too, and keeps the exit code. stdout never decides the exit code
(cli.stdout) when a reader closes it early (`| head -1`): the output ends
quietly; a stdout that cannot be written (`> /dev/full`) is one line on
stderr and exit 2 (or the command's own code, where that is worse).
"""
from __future__ import annotations

import os
import sys

import click

from ..errors import (EXIT_CHECK_FAILED, EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, BuildError,
                      CubinrunError, one_line)
from . import stdout
from .common import JSON_BEFORE_COMMAND, Flags, everywhere_options

# Each command: (its module in this package, the click command in it). A module
# is imported when its command is asked for: `cubinrun launch` never imports
# tune's, inspect's or compare's module (and what they import).
COMMANDS = {
    "launch": ("launch", "launch"), "compare": ("results", "compare"),
    "plot": ("results", "plot"), "gen": ("source", "gen"), "props": ("device", "props"),
    "inspect": ("binaries", "inspect"), "compile": ("binaries", "compile_command"),
    "init": ("binaries", "init"), "profile": ("profile", "profile"),
    "repro": ("repro", "repro"), "cache": ("caches", "cache"), "schema": ("schema", "schema"),
    "tune": ("tune", "tune"), "history": ("history", "history"),
    "capture": ("capture", "capture"),
}


class _Commands(click.Group):
    """The commands of COMMANDS, each loaded (with the options every command
    takes) the first time it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            import importlib
            module, attribute = COMMANDS[name]
            command = getattr(importlib.import_module(f".{module}", __name__), attribute)
            _add_everywhere_options(command)
            self.add_command(command, name)
        return self.commands.get(name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cubinrun")
@click.option("--json", "as_json", is_flag=True,
              help="The command's --json (it may also follow the command).")
@click.pass_context
def cli(ctx: click.Context, as_json: bool) -> None:
    """Run one compiled CUDA kernel from a YAML spec: launch, check, time.

    --debug, --no-color and --json work before the command and after it."""
    if as_json and ctx.invoked_subcommand:
        command = cli.get_command(ctx, ctx.invoked_subcommand)
        if isinstance(command, click.Group):
            pass                # its commands say (`cubinrun --json cache info`)
        elif command is not None and not any(p.name == "as_json" for p in command.params):
            raise click.UsageError(f"cubinrun {ctx.invoked_subcommand} has no --json output")
        ctx.meta[JSON_BEFORE_COMMAND] = True


def _add_everywhere_options(command: click.Command) -> None:
    command.params.extend(everywhere_options())
    for sub in getattr(command, "commands", {}).values():
        _add_everywhere_options(sub)


cli.params.extend(everywhere_options())


def _click_message(error: click.ClickException) -> str:
    """Click's own check of an argument (a range, a type, an option it does not
    know) as the one line every other error is, naming the command's help
    rather than printing its usage block."""
    message = error.format_message()
    context = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and context is not None:
        message += f" (see {context.command_path} --help)"
    return message


def _print_error(error: CubinrunError) -> None:
    if isinstance(error, BuildError) and error.log:
        sys.stderr.write(error.log.rstrip() + "\n")
    sys.stderr.write(f"error: {one_line(str(error))}\n")


def main(argv: list[str] | None = None) -> None:
    Flags.debug = False
    no_color = os.environ.get("NO_COLOR")   # --no-color sets it for this command only
    original, guard = stdout.install()
    try:
        code = _dispatch(argv)
    except SystemExit as done:              # a command's own exit code (launch's 1)
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        if no_color is None:
            os.environ.pop("NO_COLOR", None)
        guard.flush()                       # now, while a failure can still be reported
        sys.stdout = original
    if guard.failed is not None and code in (EXIT_OK, EXIT_CHECK_FAILED, EXIT_REGRESSION):
        code = EXIT_USAGE                   # output the user asked for is lost (cli.stdout)
    sys.exit(code)


def _dispatch(argv: list[str] | None) -> int:
    try:
        cli.main(args=argv, prog_name="cubinrun", standalone_mode=False)
    except CubinrunError as error:
        if Flags.debug:
            import traceback
            traceback.print_exc()
        _print_error(error)
        return error.exit_code
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.NoArgsIsHelpError as error:      # a bare group: its help
        error.show()
        return error.exit_code
    except click.ClickException as error:
        sys.stderr.write(one_line(f"error: {_click_message(error)}") + "\n")
        return error.exit_code if error.exit_code else EXIT_USAGE
    except click.exceptions.Abort:
        sys.stderr.write("aborted\n")
        return 130
    except ModuleNotFoundError as error:    # a dependency that is not installed
        from ..missing import missing_dependency
        words = [a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")]
        if (missing := missing_dependency(error, words[0] if words else None)) is None:
            raise
        if Flags.debug:
            import traceback
            traceback.print_exc()
        _print_error(missing)
        return missing.exit_code
    except OSError as error:                # a file the OS refused to read or write
        if Flags.debug:
            import traceback
            traceback.print_exc()
        where = f"{error.filename}: " if error.filename else ""
        sys.stderr.write(one_line(f"error: {where}{error.strerror or error}") + "\n")
        return EXIT_USAGE
    return 0

