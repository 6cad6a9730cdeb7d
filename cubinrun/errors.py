"""Errors a user can cause, each carrying the exit code of SPEC.md section 2.

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


class CudaError(CubinrunError):
    """A CUDA driver call failed, or there is no driver or device."""

    exit_code = EXIT_CUDA

    def __init__(self, message: str, *, call: str | None = None,
                 result: int | None = None, result_name: str | None = None):
        self.call = call
        self.result = result
        self.result_name = result_name
        super().__init__(message)
