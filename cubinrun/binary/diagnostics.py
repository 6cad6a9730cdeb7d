"""The compiler's own reason, in the one-line error of a failed build.

NVRTC and nvcc (through cudafe++) write `FILE(LINE): error: MESSAGE`, the
host compiler `FILE:LINE:COL: error: MESSAGE`, ptxas and nvcc itself
`ptxas error   : MESSAGE` and `nvcc fatal   : MESSAGE`; NVRTC's closing line
("1 catastrophic error detected") says how many, not why. `first_diagnostic` picks the first error
as `FILE:LINE: MESSAGE`, a header of CCCL or the runtime named as included
(`<cub/cub.cuh>`) rather than by its long install path, and `way_out` adds
what to do for the failures whose fix is known.
"""
from __future__ import annotations

import re

from ..errors import one_line, shorten

_LOCATED = re.compile(r"^(?P<file>[^\s(][^(\n]*?)(?:\((?P<line>\d+)\)|:(?P<line2>\d+)(?::\d+)?):"
                      r"\s*(?:catastrophic error|fatal error|error)\s*:?\s*(?P<message>.+)$",
                      re.M | re.I)
_UNLOCATED = re.compile(r"^(?:ptxas|nvlink|nvcc)?\s*(?:fatal|(?:fatal\s*)?error)\s*:\s*"
                        r"(?P<message>.+)$", re.M | re.I)
MAX_MESSAGE = 300               # the diagnostic quoted; the whole log is on stderr / --debug


def first_diagnostic(log: str, include_dirs=()) -> str | None:
    """The first error of `log` as `FILE:LINE: MESSAGE` (or `MESSAGE`), or None."""
    if m := _LOCATED.search(log):
        where = _as_included(m.group("file").strip(), include_dirs)
        line = m.group("line") or m.group("line2")
        return one_line(shorten(f"{where}:{line}: {m.group('message').strip()}", MAX_MESSAGE))
    if m := _UNLOCATED.search(log):
        return one_line(shorten(m.group("message").strip(), MAX_MESSAGE))
    return None


def _as_included(path: str, include_dirs) -> str:
    normal = path.replace("\\", "/")
    for folder in include_dirs:
        prefix = str(folder).replace("\\", "/").rstrip("/") + "/"
        if normal.startswith(prefix):
            return f"<{normal[len(prefix):]}>"
    return path


_WHOLE_CUB = re.compile(r"Including <([\w/.]+)> is not "
                        r"supported when compiling with NVRTC")


def way_out(log: str) -> str:
    """What to do, for a failure whose fix is known; "" otherwise."""
    if m := _WHOLE_CUB.search(log):
        return (f" (the way out: include the specific header <{m.group(1)}> stands for, or "
                "compile with `kernel.compiler: nvcc`, the nvcc extra: "
                "pip install 'cubinrun[nvcc]')")
    if re.search(r'cannot open source file "(c?std\w*|cstdlib|cstring|iostream|[\w/]*helper_\w+\.h)'
                 r'|not allowed in JIT mode|host function', log):
        return " (host code? `kernel.compiler: nvcc` compiles whole .cu files)"
    return ""
