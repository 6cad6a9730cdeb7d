"""What the sanitizer and profiler runs share: finding an NVIDIA tool, and the
cubinrun command line they run under it."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Iterable

from ..errors import CudaError

TOOLKIT_BIN = Path("/usr/local/cuda/bin")


def find_tool(executable: str, label: str = "",
              more: Iterable[tuple[str, Callable[[], str | None]]] = (),
              advice: str = "") -> str:
    """`executable` on PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin,
    then in `more` (description, finder) places; CudaError (exit 4) naming them all."""
    looked = ["PATH"]
    found = shutil.which(executable)
    if found:
        return found
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(variable)
        looked.append(f"${variable}/bin" + ("" if root else " (unset)"))
        if root and (candidate := Path(root, "bin", executable)).is_file():
            return str(candidate)
    looked.append(str(TOOLKIT_BIN))
    if (candidate := TOOLKIT_BIN / executable).is_file():
        return str(candidate)
    for description, finder in more:
        if found := finder():
            return found
        looked.append(description)
    places = ", ".join(looked[:-1]) + " and " + looked[-1]
    name = f"{executable} ({label})" if label else executable
    raise CudaError(f"{name} not found: looked on {places}" + (f"; {advice}" if advice else ""),
                    call=executable)


def cubinrun_command(spec_path: str, overrides: Iterable[str], device: int | None) -> list[str]:
    """cubinrun itself: one untimed launch of the kernel, no guard bands (nothing
    but the kernel touches the buffers), the JSON report on stdout."""
    command = [sys.executable, "-m", "cubinrun", "launch", str(spec_path), "--no-bench",
               "--no-guard", "--json"]
    for override in overrides:
        command += ["--set", override]
    if device is not None:
        command += ["--device", str(device)]
    return command
