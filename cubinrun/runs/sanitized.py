"""`launch --sanitize [TOOL]`: every run, in turn, under compute-sanitizer.

The executor has the interface of runs.executor's (`run(tasks, stop)`
yields RunRecords in order), so result files, the table, --fail-fast and the
exit code work as for any launch. Each run is a cubinrun process of its own
(`launch SPEC --set ... --no-bench --no-guard --json`, the task's point given
as --set so it runs exactly that point) under the tool, limited to the
spec's kernel and its first launch (debug.sanitizer). Runs go one after
another: the tool slows a kernel down many times and takes the GPU's
attention, so running several at once would gain little and mix up their
output.

A finding fails the run as a failed check does (exit 1); where the tool
found nothing but cubinrun under it failed (a spec, build or CUDA error),
the run has that exit code and its error line, prefixed `under TOOL:`.
"""
from __future__ import annotations

import time
from typing import Iterable, Iterator

from ..errors import (EXIT_BUILD, EXIT_CHECK_FAILED, EXIT_CUDA, EXIT_OK, EXIT_USAGE,
                      BuildError, CubinrunError, CudaError, UsageError)
from .executor import Stop, _never
from .expand import RunTask
from .outcome import RunRecord

# what the outer record says about a run; the inner report's own are dropped
_RECORD_KEYS = ("spec", "point", "exit_code", "status", "error", "wall_s", "pow2", "compare")
_ERRORS = {EXIT_USAGE: (UsageError, "spec"), EXIT_BUILD: (BuildError, "build"),
           EXIT_CUDA: (CudaError, "cuda")}


class SanitizerExecutor:
    def __init__(self, tool: str, device: int | None):
        from ..debug.sanitizer import find_sanitizer
        self.tool, self.device = tool, device
        self.executable = find_sanitizer()      # missing: exit 4 before any run
        self._device_values = None

    def run(self, tasks: Iterable[RunTask], stop: Stop = _never) -> Iterator[RunRecord]:
        for task in tasks:
            record = self.execute(task)
            yield record
            if stop(record):
                return

    def execute(self, task: RunTask) -> RunRecord:
        from ..debug.sanitizer import run_sanitizer
        from ..debug.tools import cubinrun_command
        started = time.perf_counter()
        if not task.runnable:
            return RunRecord.not_run(task)
        try:
            kernel = self._kernel_name(task)
            program = cubinrun_command(task.spec, [f"{k}={v}" for k, v in task.overrides.items()],
                                       self.device)
            run = run_sanitizer(self.tool, kernel, program, self.executable)
        except CubinrunError as error:
            return RunRecord.failed(task, error, time.perf_counter() - started)
        return sanitized_record(task, run, time.perf_counter() - started)

    def _kernel_name(self, task: RunTask) -> str | None:
        """The entry symbol, to limit the tool to it; read from the binary when the
        spec leaves it out (not for kernels compiled for the device: only one
        kernel is launched without timing anyway). The spec is read and its data
        checked here first, so its mistakes are found without the tool."""
        from ..gpu.props import device_values_of
        from ..pipeline.prepare import needs_device_target, plan_spec, prepare
        if self._device_values is None:
            self._device_values = device_values_of(self.device or 0)
        plan = plan_spec(task.spec, task.overrides, self._device_values)
        if plan.spec.kernel.name:
            return plan.spec.kernel.name
        return None if needs_device_target(plan.spec) else prepare(plan).kernel_name

    def close(self) -> None:
        pass


def sanitized_record(task: RunTask, run, wall_s: float) -> RunRecord:
    """The record of a run under the tool (debug.sanitizer.SanitizerRun): cubinrun's
    own report under it, less what the record says itself, plus `sanitizer`."""
    report = run.report or {}
    result = {k: v for k, v in report.items() if k not in _RECORD_KEYS}
    result.setdefault("kernel", run.kernel)
    result["sanitizer"] = run.to_json()
    if not run.passed:
        code = EXIT_CHECK_FAILED
    elif run.report is not None or 0 < run.exit_code <= EXIT_CUDA:
        code = run.exit_code        # cubinrun's own outcome: a failed check, a spec error...
    else:
        code = EXIT_CUDA if run.exit_code else EXIT_OK
    if code not in (EXIT_OK, EXIT_CHECK_FAILED, *_ERRORS):
        code = EXIT_CUDA            # killed by a signal, or an exit code of the tool's own
    record = RunRecord(task, code, result=result, wall_s=wall_s, live=run)
    if code in _ERRORS:
        # the program or the tool failed without a finding: say why
        reason = run.program_error or run.tool_error or f"exit code {run.exit_code}"
        kind, label = _ERRORS[code]
        record.error = f"under {run.tool}: {reason}"
        record.error_type = (report.get("error") or {}).get("type") or label
        record.exception = kind(record.error)
    return record
