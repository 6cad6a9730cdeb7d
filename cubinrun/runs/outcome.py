"""One run's outcome as plain, picklable data (it crosses from a worker
process), and the exit code of many runs.

The exit code is the most severe of all runs: a CUDA error (4) over a build
error (3) over a spec error (2) over a failed check (1) over a regression
(5) over success (0). A regression ranks below anything worse than
success: a wrong result is worse than a slow one, so 1 outranks 5.

Two outcomes of a sweep's point are not failures (SPEC section 5): `skipped`
(it fails a constraint, so it never runs; exit 0) and `invalid` (its build or
load hit a resource limit of the kernel; exit 3, or 0 with `sweep_invalid:
skip`). A spec whose every point is skipped runs nothing, which is no
success: its last point stays `skipped` and carries the error (exit 2).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import (EXIT_BUILD, EXIT_CHECK_FAILED, EXIT_CUDA, EXIT_OK, EXIT_REGRESSION,
                      EXIT_USAGE, BuildError, CubinrunError, CudaError, invalid_reason)
from ..missing import MissingDependency
from .expand import RunTask, point_text

SEVERITY = (EXIT_OK, EXIT_REGRESSION, EXIT_CHECK_FAILED, EXIT_USAGE, EXIT_BUILD, EXIT_CUDA)

STATUS = {EXIT_OK: "ok", EXIT_CHECK_FAILED: "check failed", EXIT_USAGE: "spec error",
          EXIT_BUILD: "build error", EXIT_CUDA: "CUDA error", EXIT_REGRESSION: "slower"}


# Failures whose exit code is shared: an internal error is 4, but no CUDA call
# failed (it is a bug); a missing package is 2, but the spec is fine.
OTHER_STATUS = {"internal": "internal error", "dependency": "missing package"}

# What a launch says once when there is no GPU at all, after the driver's line.
NO_GPU_HINT = "without a GPU, --dry-run checks every spec and point"


def no_gpu(error: BaseException) -> bool:
    """No driver or no device at all: every run will fail the same way."""
    return isinstance(error, CudaError) and (
        str(error).startswith("no NVIDIA driver found")
        or getattr(error, "result_name", None) == "CUDA_ERROR_NO_DEVICE")


def most_severe(codes: Iterable[int]) -> int:
    return max(codes, key=SEVERITY.index, default=EXIT_OK)


def error_type(error: BaseException) -> str:
    if isinstance(error, MissingDependency):
        return "dependency"
    if isinstance(error, CudaError):
        return "cuda"
    if isinstance(error, BuildError):
        return "build"
    if isinstance(error, CubinrunError):
        return "spec" if error.exit_code == EXIT_USAGE else "error"
    return "internal"


@dataclass
class RunRecord:
    task: RunTask
    exit_code: int
    result: dict | None = None          # RunResult.to_json(); None when the run failed first
    error: str | None = None            # one line
    error_type: str | None = None       # spec, build, cuda, dependency, internal
    log: str = ""                       # a build tool's output
    wall_s: float = 0.0
    broken: bool = False                # the device context is unusable after this run
    no_gpu: bool = False                # it failed for want of any driver or device
    compare: dict | None = None         # the baseline comparison (launch --baseline)
    device: dict | None = None          # the worker's device tag (several workers or Ray)
    live: Any = field(default=None, repr=False)        # same process only: the RunResult
    exception: BaseException | None = field(default=None, repr=False)   # same process only
    outcome: str | None = None          # "skipped" or "invalid" (a sweep's point); else None

    @classmethod
    def failed(cls, task: RunTask, error: BaseException, wall_s: float = 0.0) -> "RunRecord":
        """The record of a run that ended with `error`: in a sweep, a resource
        limit of the kernel makes the point `invalid`."""
        if isinstance(error, ModuleNotFoundError):
            from ..missing import missing_dependency
            error = missing_dependency(error) or error
        code = error.exit_code if isinstance(error, CubinrunError) else EXIT_CUDA
        message = str(error) if isinstance(error, CubinrunError) else \
            f"internal error: {type(error).__name__}: {error}"
        record = cls(task, code, error=message, error_type=error_type(error),
                     log=getattr(error, "log", "") or "", wall_s=wall_s, exception=error,
                     no_gpu=no_gpu(error))
        reason = invalid_reason(error)
        if reason is not None and task.in_sweep:
            record.outcome, record.error_type, record.error = "invalid", "invalid", reason
            record.exit_code = EXIT_OK if task.invalid_skip else EXIT_BUILD     # SPEC section 5
            if task.invalid_skip:
                record.exception = None
        return record

    @classmethod
    def not_run(cls, task: RunTask) -> "RunRecord":
        """The record of a task that is not run: its expansion failed, or it
        fails a constraint (and, when every point of its spec does, the
        error that says nothing runs)."""
        if task.skipped is None:
            return cls.failed(task, task.error)
        if task.error is None:
            return cls(task, EXIT_OK, outcome="skipped")
        return cls(task, task.error.exit_code, error=str(task.error),
                   error_type=error_type(task.error), exception=task.error, outcome="skipped")

    @property
    def status(self) -> str:
        if self.outcome:
            return self.outcome
        if self.error_type in OTHER_STATUS:     # not what the exit code alone would say
            return OTHER_STATUS[self.error_type]
        return STATUS.get(self.exit_code, f"exit {self.exit_code}")

    def error_line(self) -> str:
        """`error: ...` (`invalid: ...` for an invalid point) naming the run once (a
        spec error already starts with its file)."""
        task = self.task
        word = "invalid" if self.outcome == "invalid" else "error"
        if self.outcome == "skipped":          # its spec's error: about every point, not this one
            return f"{word}: {self.error}"
        if self.error and self.error.startswith(task.spec):
            return f"{word}: {self.error}" + (f" (at {point_text(task.point)})" if task.point else "")
        return f"{word}: {task.label}: {self.error}"

    def portable(self) -> "RunRecord":
        """This record without what cannot leave the process."""
        self.live = self.exception = None
        return self

    def to_json(self) -> dict:
        """The result object of SPEC section 2 plus spec, point, exit_code (section 3),
        and status, error, wall_s and compare."""
        document = dict(self.result) if self.result else {}
        if self.device:                 # what the run measured wins; the tag fills in
            device = document["device"] = dict(document.get("device") or {})
            for key, value in self.device.items():
                device.setdefault(key, value)
        document.update({
            "spec": self.task.spec, "point": dict(self.task.point),
            "exit_code": self.exit_code, "status": self.status,
            "error": ({"type": self.error_type, "message": self.error} if self.error else None),
            "wall_s": round(self.wall_s, 4),
        })
        if self.task.skipped is not None:
            document["constraint"] = self.task.skipped
        if self.task.pow2:
            document["pow2"] = list(self.task.pow2)
        if self.compare is not None:
            document["compare"] = self.compare
        return document
