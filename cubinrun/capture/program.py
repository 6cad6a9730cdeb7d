"""Running the user's program, unchanged, with capture attached: the Triton
hook's folder first on PYTHONPATH (its sitecustomize loads the hook and then
the program's own sitecustomize), the CUPTI injection library in
$CUDA_INJECTION64_PATH, and the options in environment variables that every
process the program starts inherits. stdin, stdout and stderr are the
program's own, so what it prints is what it prints without capture.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from importlib import resources
from pathlib import Path
from typing import Sequence

from ..errors import UsageError
from .selection import Selection

HOOK_FOLDER = "hook"


def hook_folder() -> str:
    return str(resources.files("cubinrun.capture").joinpath(HOOK_FOLDER))


def child_environment(stage: Path, selection: Selection, injection: Path | None,
                      cupti: str | None, triton: bool, debug: bool,
                      base: dict | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["CUBINRUN_CAPTURE_DIR"] = str(stage)
    numbers = {"LIMIT": selection.limit, "SKIP": selection.skip,
               "MAX_LAUNCH_BYTES": selection.max_launch_bytes,
               "MAX_TOTAL_BYTES": selection.max_total_bytes}
    for name, value in numbers.items():
        env.pop(f"CUBINRUN_CAPTURE_{name}", None)
        if value is not None:
            env[f"CUBINRUN_CAPTURE_{name}"] = str(value)
    env["CUBINRUN_CAPTURE_KERNEL"] = selection.kernel or ""
    env["CUBINRUN_CAPTURE_DEBUG"] = "1" if debug else "0"
    if triton:
        env["PYTHONPATH"] = os.pathsep.join(
            [hook_folder()] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if injection is not None:
        env["CUDA_INJECTION64_PATH"] = str(injection)
        env["CUBINRUN_CAPTURE_INJECTION"] = str(injection)
        env["CUBINRUN_CAPTURE_CUPTI"] = cupti or ""
    return env


def run_program(command: Sequence[str], env: dict[str, str]) -> tuple[int, float]:
    """The program's exit code (128 + N for a signal, as a shell reports it) and
    its wall time. An interrupt reaches the program (it shares our terminal);
    we wait for it to end."""
    start = time.perf_counter()
    try:
        process = subprocess.Popen(list(command), env=env)
    except OSError as exc:
        raise UsageError(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    while True:
        try:
            code = process.wait()
            break
        except KeyboardInterrupt:
            continue                    # the program got it too; it decides
    wall = time.perf_counter() - start
    return (128 - code if code < 0 else code), wall


def signal_name(code: int) -> str:
    if code > 128:
        try:
            return f" ({signal.Signals(code - 128).name})"
        except ValueError:
            pass
    return ""
