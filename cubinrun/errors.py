"""Errors a user can cause, each carrying its exit code (docs/commands.md).

The CLI catches `CubinrunError`, prints `str(error)` as one line on stderr and
exits with `error.exit_code`. Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_BUILD = 3
EXIT_CUDA = 4
EXIT_REGRESSION = 5         # a baseline comparison found a run SLOWER


class CubinrunError(Exception):
    """Base class: a one-line message and an exit code."""

    exit_code = EXIT_USAGE


class UsageError(CubinrunError):
    """Bad command-line usage (a path that does not exist, a bad --set)."""

    exit_code = EXIT_USAGE


class SpecError(CubinrunError):
    """A problem with a spec, located by file, field path and YAML line."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, field: str | None = None,
                 file: str | None = None, line: int | None = None):
        self.message = message
        self.field = field
        self.file = file
        self.line = line
        super().__init__(message)

    def located(self, *, field: str | None = None, file: str | None = None,
                line: int | None = None) -> "SpecError":
        """Fill in location parts that are still unknown (inner code knows less)."""
        self.field = self.field or field
        self.file = self.file or file
        self.line = self.line or line
        return self

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"


class BuildError(CubinrunError):
    """The C compiler or NVRTC failed; `log` holds the tool's own output."""

    exit_code = EXIT_BUILD

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(message)


class ResourceLimit:
    """Mixin of the errors that say the kernel, as built or launched for this
    point, exceeds a resource limit of the GPU: static shared memory at build
    (ptxas), threads per block above the kernel's limit (its
    __launch_bounds__ or register use), dynamic shared memory above the
    device's, a cooperative grid that does not fit.

    Raised where the limit is found, so a sweep reports the point `invalid`
    with `reason` (runs/outcome.py) instead of failing; outside a sweep each
    keeps its exit code (3 for a build, 2 for the spec's launch)."""

    reason: str = ""


class ResourceLimitError(ResourceLimit, BuildError):
    """A build that fails for a resource limit (ptxas: "uses too much shared data")."""

    def __init__(self, message: str, reason: str, log: str = ""):
        self.reason = reason        # one line: what exceeds which limit
        super().__init__(message, log)


class LaunchLimitError(ResourceLimit, SpecError):
    """The spec's launch exceeds a limit of the built kernel or the device."""

    def __init__(self, message: str, **where):
        self.reason = message
        super().__init__(message, **where)


def invalid_reason(error: BaseException) -> str | None:
    """Why a sweep's point is invalid (a resource limit of the kernel), or None
    when `error` is any other failure."""
    return error.reason if isinstance(error, ResourceLimit) else None


class CudaError(CubinrunError):
    """A CUDA driver call failed, or there is no driver or device."""

    exit_code = EXIT_CUDA

    def __init__(self, message: str, *, call: str | None = None,
                 result: int | None = None, result_name: str | None = None):
        self.call = call
        self.result = result
        self.result_name = result_name
        super().__init__(message)


def excerpt(value, limit: int | None = None) -> str:
    """A short repr of a user's value for an error message.

    A value can be huge (a 4 MiB string, a list that aliases expand a
    billion-fold): only its start is quoted, and only that much of it is
    ever walked, so building the message costs no more than printing it.
    """
    from .limits import MAX_QUOTED_CHARS
    limit = limit or MAX_QUOTED_CHARS
    text = _bounded_repr(value, limit + 1)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def one_line(text: str) -> str:
    """`text` with every character that is not printable escaped (`\\x1e`): a key
    or value holding a line break or a control character must not break the
    error's one line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def shorten(text: str, limit: int | None = None) -> str:
    """Plain text for a message, cut to `limit` characters (MAX_QUOTED_CHARS)."""
    from .limits import MAX_QUOTED_CHARS
    limit = limit or MAX_QUOTED_CHARS
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _bounded_repr(value, budget: int, depth: int = 0) -> str:
    if isinstance(value, str):
        return repr(value[:budget])
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * budget:
        return f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, (list, tuple, dict)):
        if depth >= 3:
            return "[...]" if isinstance(value, (list, tuple)) else "{...}"
        items = value.items() if isinstance(value, dict) else value
        parts, used = [], 0
        for item in items:
            if used > budget:
                parts.append("...")
                break
            if isinstance(value, dict):
                text = (f"{_bounded_repr(item[0], budget, depth + 1)}: "
                        f"{_bounded_repr(item[1], budget, depth + 1)}")
            else:
                text = _bounded_repr(item, budget, depth + 1)
            parts.append(text)
            used += len(text) + 2
        open_, close = ("{", "}") if isinstance(value, dict) else ("[", "]")
        return open_ + ", ".join(parts) + close
    text = repr(value)
    return text[:budget]
