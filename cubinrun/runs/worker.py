"""Running tasks on one device in this process: the `Runner`, and the loop a
worker process runs (`serve`).

A Runner owns the device's lifecycle and nothing else: it starts CUDA once
(on a thread, while the first spec is read), keeps one `pipeline.session.Session`
for all its tasks and runs each through the one pipeline
(`pipeline.session.on_host`, then `run_on_device`), so a sweep reuses its
binary, its loaded module, the launcher, the stream, the timing kernels and
the event offset. After a CUDA error the Runner asks the context whether it still
works: a sticky error (an illegal address, a trap) poisons the context for
good, so the record says `broken` and whoever owns the Runner replaces it: a
worker process exits and its executor starts a new one; the in-process
executor resets the primary context.

Worker processes are spawned, never forked (a forked CUDA process is
unusable). `serve(setup=...)` first calls `module:function` if given: the one
hook for tests, which install their fake driver there (tests/fakecuda).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..gpu import driver
from ..errors import CubinrunError, CudaError
from ..pipeline.result import RunOptions
from ..pipeline.session import HostSide, Session, on_host, run_on_device
from ..specfile.device_values import DeviceValues
from .expand import RunTask
from .outcome import RunRecord

# CUresults after which the context refuses all work (CUDA's "sticky" errors).
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC", "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ASSERT", "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
})


class Runner:
    """Runs tasks one after another on device `ordinal`, CUDA started once.

    Each result's `device` also gets the card's UUID and the host, and the
    ordinal from `tag` when there is one (a worker whose CUDA_VISIBLE_DEVICES
    names one card sees it as device 0; the tag has the launch process's)."""

    def __init__(self, ordinal: int, options: RunOptions, tag: dict | None = None):
        self.ordinal, self.options = ordinal, options
        self.tag = tag or {}
        self.opening: driver.DeviceOpening | None = driver.DeviceOpening(ordinal)
        if options.bench:               # the timing helpers' launchers, built meanwhile
            from ..gpu.timing import build_helpers_ahead
            build_helpers_ahead()
        self.session = None
        self._identity: dict | None = None
        # (task index, its HostSide or what getting it ready raised): get_ready_ahead
        self._ahead: tuple[int, HostSide | Exception] | None = None

    def execute(self, task: RunTask) -> RunRecord:
        started = time.perf_counter()
        if not task.runnable:
            return RunRecord.not_run(task)
        try:
            result = self._run(task)
        except CubinrunError as error:
            record = RunRecord.failed(task, error, time.perf_counter() - started)
            record.broken = isinstance(error, CudaError) and self._context_broken(error)
            return record
        except Exception as error:              # a bug: confined to its run, reported as such
            import traceback
            record = RunRecord.failed(task, error, time.perf_counter() - started)
            record.log = traceback.format_exc()
            record.broken = True                # nothing is known about the context
            return record
        document = result.to_json()
        document["device"].update(self._device_identity())
        return RunRecord(task, result.exit_code, result=document,
                         wall_s=time.perf_counter() - started, live=result)

    def _device_identity(self) -> dict:
        if self._identity is None:
            import socket
            try:
                uuid = driver.device_uuid(self.session.device.handle)
            except CudaError:                   # a tag: never the reason a run fails
                uuid = None
            self._identity = {"uuid": uuid, "host": socket.gethostname()}
            if "ordinal" in self.tag:
                self._identity["ordinal"] = self.tag["ordinal"]
        return self._identity

    def _options(self, task: RunTask) -> RunOptions:
        from dataclasses import replace
        return replace(self.options, check=False) if task.timing_only else self.options

    def _run(self, task: RunTask):
        options = self._options(task)
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] == task.index:
            host = ahead[1]
            if isinstance(host, Exception):
                raise host                  # reported as if it had been raised now
        else:
            host = on_host(task.spec, task.overrides, self, options.check)
        return run_on_device(host, options, self)

    def get_ready_ahead(self, task: RunTask) -> None:
        """The task's host side, made now for the execute() that follows (another
        process is timing meanwhile); an error it raises is raised there."""
        self._ahead = None                  # one held at a time
        if not task.runnable:
            return
        try:
            host = on_host(task.spec, task.overrides, self, self._options(task).check,
                           ahead=True)
        except Exception as error:          # noqa: BLE001 - raised again by execute()
            self._ahead = (task.index, error)
        else:
            self._ahead = (task.index, host)

    # The pipeline's Devices: the values a spec may name, and the session.
    @property
    def values(self) -> DeviceValues:
        return DeviceValues(self._device_values, f"device {self.ordinal}")

    def is_open(self) -> bool:
        return self.session is not None

    def open_session(self) -> Session:
        """The session, opening the device now if it is not open (waiting for
        it if it is opening)."""
        if self.session is None:
            opening, self.opening = self.opening, None
            device = opening.wait() if opening is not None else driver.open_device(self.ordinal)
            self.session = Session(device)
        return self.session

    def open(self) -> driver.Device:
        """The device, opened now rather than with the first run (a Ray worker
        reports it before it is given runs)."""
        return self.open_session().device

    def _device_values(self) -> dict[str, int]:
        """sm_count and the rest, for a spec that names them: from the device this
        runner runs on (waiting for it to open if it is opening)."""
        from ..gpu.props import device_values
        if self.session is not None:
            return device_values(self.session.device)
        if self.opening is not None:
            return device_values(self.opening.wait())
        return device_values(driver.open_device(self.ordinal))

    def _context_broken(self, error: CudaError) -> bool:
        if self.session is None:
            return False                        # no context yet: no driver, no device
        if error.result_name in STICKY_ERRORS:
            return True
        try:
            driver.synchronize("checking the context after an error")
        except CudaError:
            return True
        return False

    def recover(self) -> None:
        """After a broken context, in this process: a fresh primary context."""
        session, self.session = self.session, None
        self._identity = None
        if session is None:
            return
        session.close()
        try:
            driver.call("cuDevicePrimaryCtxReset", session.device.handle)
        except CudaError:
            pass                                # the next run's open says what is wrong

    def close(self) -> None:
        if self.opening is not None:
            self.opening.settle()               # never exit with the driver mid-initialisation
        if self.options.bench:
            from ..gpu.timing import settle_helpers
            settle_helpers()
        if self.session is not None:
            self.session.close()
            self.session = None


@dataclass(frozen=True)
class Ahead:
    """Sent to a worker: get this task's host side ready now (Runner.get_ready_ahead);
    no record comes back. The task itself follows."""
    task: RunTask


def serve(connection, ordinal: int, options: RunOptions, setup: str | None = None,
          tag: dict | None = None) -> None:
    """A worker process: run the tasks it is sent (None ends it), send back records.
    It exits after a run that broke its context; its executor starts another."""
    import os
    import signal
    import sys
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent handles Ctrl-C and ends us
    # stdout belongs to the parent (`--json`, `--jsonl -`): anything a worker or a
    # library prints goes to stderr, from Python and from C alike.
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    run_setup(setup)
    runner = Runner(ordinal, options, tag)
    try:
        while True:
            try:
                task = connection.recv()
            except (EOFError, OSError):
                break
            if task is None:
                break
            if isinstance(task, Ahead):
                runner.get_ready_ahead(task.task)
                continue
            record = runner.execute(task)
            try:
                connection.send(record.portable())
            except OSError:                 # the launch process is gone: nothing to answer
                break
            if record.broken:
                break
    finally:
        runner.close()
        connection.close()


def run_setup(setup: str | None) -> None:
    """Call `module:function` (runs.executor.WORKER_SETUP) first in a worker."""
    if setup:
        import importlib
        module, _, function = setup.partition(":")
        getattr(importlib.import_module(module), function)()
