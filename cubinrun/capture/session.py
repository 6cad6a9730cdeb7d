"""One `cubinrun capture`: the program run with capture attached, then its
raw records turned into a folder that `cubinrun launch DIR` runs.

Everything is written into a hidden folder beside the output and renamed into
place at the end, so the output folder is there whole or not at all: a full
disk (or any other failure to write) removes what was written and is one
line. A program that exits non-zero still gets its captured launches written,
and its exit code is the command's.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import BuildError, UsageError
from .params import NotExpressible
from .program import child_environment, run_program
from .records import read_counts, read_processes
from .selection import Selection, choose
from .spec_writer import write_spec
from .summary import SUMMARY_FILE, Summary


@dataclass(frozen=True)
class CaptureOptions:
    command: tuple[str, ...]
    output: Path
    selection: Selection = Selection()
    force: bool = False
    triton: bool = True                 # the Triton hook
    cupti: bool | None = None           # the injection library; None: when it can be built
    debug: bool = False
    verify: bool = True                 # replay the folder and record each spec's outcome


def check_output_folder(out: Path, force: bool) -> None:
    """Refused before the program runs: a missing parent, a file or link in the
    way, an existing folder without --force, and with it one that is no
    capture's (a capture never empties a folder it did not write)."""
    if not out.parent.is_dir():
        raise UsageError(f"-o {out}: no folder {out.parent}")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UsageError(f"-o {out}: exists and is not a folder")
    if out.exists():
        if not force:
            raise UsageError(f"{out} exists; pass --force to replace it")
        if any(out.iterdir()) and not (out / SUMMARY_FILE).is_file():
            raise UsageError(f"{out} exists and holds no {SUMMARY_FILE}: it is not a capture "
                             "folder, so --force leaves it alone; name another folder")


def capture(options: CaptureOptions, say: Callable[[str], None]) -> Summary:
    out = options.output
    check_output_folder(out, options.force)
    injection, cupti = _injection(options, say)
    # absolute: the program (and each process it starts) may change its folder
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.capture-", dir=out.parent.absolute()))
    try:
        (stage / "raw").mkdir()
        env = child_environment(stage, options.selection, injection, cupti, options.triton,
                                options.debug)
        say(f"capture: running {shlex.join(options.command)}")
        summary = Summary(list(options.command))
        with _progress(stage / "raw", say):
            summary.exit_code, summary.wall_s = run_program(options.command, env)
        write_folder(stage, summary, options.selection, say)
        if options.verify and summary.specs:
            from .replay import replay
            say(f"capture: replaying the {len(summary.specs)} spec(s) (cubinrun launch "
                "--no-bench)")
            replay(stage, summary)
        (stage / SUMMARY_FILE).write_text(summary.to_json())
        _replace(stage, out)
    except OSError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return summary


def write_folder(stage: Path, summary: Summary, selection: Selection,
                 say: Callable[[str], None]) -> None:
    """The specs, their data and capture.json from the raw records in `stage/raw`
    (which goes, but for the debug logs, kept under `logs/`)."""
    processes = read_processes(stage / "raw")
    summary.add_processes(processes)
    chosen, summary.skipped = choose(processes, selection)
    program = shlex.join(summary.program)
    for number, record in enumerate(chosen):
        try:
            written = write_spec(record, len(summary.specs), stage, program)
        except NotExpressible as why:
            summary.skip(record.kernel, str(why))
            continue
        summary.add_spec(record, written)
        say(f"capture: [{number + 1}/{len(chosen)}] {written.spec}")
    for process in processes:
        log = process.folder / "debug.log"
        if log.is_file():
            (stage / "logs").mkdir(exist_ok=True)
            shutil.copyfile(log, stage / "logs" / f"{process.folder.name}.log")
        if process.summary.get("error"):
            summary.warnings.append(f"{process.folder.name}: {process.summary['error']}")
    shutil.rmtree(stage / "raw")
    with open(stage / SUMMARY_FILE, "x") as f:       # written again once replayed
        f.write(summary.to_json())


@contextlib.contextmanager
def _progress(raw: Path, say, every_s: float = 10.0):
    """While the program runs, on a terminal: a line every `every_s` seconds
    with the launches seen and captured so far (a CI log gets the final line)."""
    import sys
    import threading
    done = threading.Event()

    def report() -> None:
        last = None
        while not done.wait(every_s):
            counts = read_counts(raw)
            if counts != last:
                say(f"capture: {counts[0]} launch(es) seen, {counts[1]} captured so far")
                last = counts

    thread = threading.Thread(target=report, daemon=True)
    if sys.stderr.isatty():
        thread.start()
    try:
        yield
    finally:
        done.set()
        if thread.is_alive():
            thread.join()


def _injection(options: CaptureOptions, say) -> tuple[Path | None, str | None]:
    if options.cupti is False:
        return None, None
    from .injection_build import build_injection, cupti_library
    try:
        return build_injection(), cupti_library()
    except BuildError as exc:
        if options.cupti:
            raise
        say(f"capture: warning: CUPTI capture is off ({exc.message}); only Triton launches "
            "are captured")
        return None, None


def _replace(stage: Path, out: Path) -> None:
    """The finished folder takes the output's name (an old capture there, --force, goes)."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        os.replace(out, old / out.name)
        os.replace(stage, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(stage, out)
    os.chmod(out, 0o777 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def describe(summary: Summary, out: Path) -> str:
    left = sum(s.count for s in summary.skipped)
    replayed = [s["replay"]["passed"] for s in summary.specs if "replay" in s]
    passing = f", {sum(replayed)} of them replay and pass" if replayed else ""
    return (f"capture: {summary.launches_seen} launch(es) seen, {len(summary.specs)} captured "
            f"as specs in {out}{passing}, {left} left out ({out / SUMMARY_FILE} says why)")


def exit_line(command: Sequence[str], code: int) -> str:
    from .program import signal_name
    return (f"capture: {command[0]} exited with {code}{signal_name(code)}; the launches captured "
            "before it ended are kept")
