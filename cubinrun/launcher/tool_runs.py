"""Running the C toolchain (the compiler, and on Windows `tcc -impdef` and
lib.exe) with a time limit: a tool still running after $CUBINRUN_CC_TIMEOUT
seconds (120) is killed with whatever it started, and the build fails with one
line, rather than hanging cubinrun."""
from __future__ import annotations

import contextlib
import math
import os
import signal
from typing import Sequence

from ..errors import BuildError, UsageError
from ..platform import WINDOWS

DEFAULT_CC_TIMEOUT_S = 120.0    # a launcher compiles in about a second; zig's first run is slow


def compile_timeout() -> float:
    """Seconds a toolchain run may take: $CUBINRUN_CC_TIMEOUT, else 120."""
    text = os.environ.get("CUBINRUN_CC_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_CC_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise UsageError(f"CUBINRUN_CC_TIMEOUT must be a number of seconds > 0, got {text[:40]!r}")
    return seconds


def run_tool(command: Sequence[str], who: str, doing: str,
             cwd: str | None = None) -> tuple[int, str]:
    """(exit status, its stderr then stdout). `who` and `doing` name the run in
    messages: "the C compiler gcc", "compiling launcher X". It runs in a process
    group of its own, so a kill (on the time limit, or an interrupt) takes
    what it started too."""
    import subprocess   # only when something is built: start-up time matters on a hit
    timeout = compile_timeout()
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, cwd=cwd,
                                   start_new_session=not WINDOWS)
    except OSError as e:
        raise BuildError(f"cannot run {who} ({command[0]}): {e.strerror}") from None
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise BuildError(f"{who} did not finish {doing} within {timeout:g} s "
                         "(CUBINRUN_CC_TIMEOUT sets the limit)") from None
    except BaseException:
        _kill(process)
        raise
    return process.returncode, err + out


def _kill(process) -> None:
    """Kill the tool and what it started, then reap it without waiting long
    on pipes that a straggler may still hold."""
    import subprocess
    if WINDOWS:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):   # the whole tree
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)],
                           capture_output=True, timeout=10)
        process.kill()
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        process.stdout.close()
        process.stderr.close()
        process.wait()
