"""A build that failed for a resource limit of the kernel, read from ptxas's log.

ptxas (inside NVRTC, nvJitLink or nvcc) refuses a kernel that needs more of
a per-block resource than the target has, in one fixed form:

    ptxas error   : Entry function 'k' uses too much shared data (0x40000 bytes, 0xc000 max)

(also `local data`, `param space`, `constant data`). Such a build is not
broken code: the point of a sweep that asked for it is `invalid`
(errors.ResourceLimitError). The compilers' log is the only place this is
said, so it is read here, once, next to the compilers that produce it.
"""
from __future__ import annotations

import re

_TOO_MUCH = re.compile(r"Entry function '([^']{1,4096})' uses too (?:much|many) "
                       r"([a-z ]{1,40}?)\s*\((0x[0-9a-fA-F]{1,16}) bytes?, "
                       r"(0x[0-9a-fA-F]{1,16}) max\)")


def ptxas_limit(log: str) -> str | None:
    """One line naming the first exceeded resource in `log`, or None."""
    match = _TOO_MUCH.search(log[:1 << 20])
    if match is None:
        return None
    function, what, used, most = match.groups()
    return (f"{function} needs {int(used, 16)} bytes of {what}, more than the "
            f"{int(most, 16)} the target allows")
