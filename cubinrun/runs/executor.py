"""Executing runs: records come back in input order, whoever ran them.

Two executors share one interface, `run(tasks, stop) -> iterator of
RunRecord`:

- `InlineExecutor` runs in this process (a single run, which then keeps the
  start-up overlap of `launch`; and tests with the in-process fake driver). A
  broken context is rebuilt with a primary-context reset.
- `ProcessExecutor` hands tasks to worker processes (spawned, one per
  placement: a device ordinal, the environment the worker starts with, e.g.
  its CUDA_VISIBLE_DEVICES, and the tag its records carry; see devices.py;
  `worker.serve`), each of which opens CUDA once. A worker that dies (a
  crash, a signal) or exits after breaking its context is replaced for the
  next task; the task it was running gets a CUDA-error record (exit 4)
  saying how the worker ended. Tasks go to idle workers as they free up and
  the records are put back in input order.
- `ray_backend.RayExecutor` does the same with Ray actors, one per GPU of a
  cluster.

`stop(record)` (e.g. --fail-fast) ends the run after that record: no later
task is started and records past it are dropped. (`launch --sanitize` has a
third executor with this interface: runs.sanitized.)
"""
from __future__ import annotations

import os
import time
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence

from ..errors import EXIT_CUDA
from ..pipeline.session import RunOptions
from .devices import Placement
from .expand import RunTask
from .outcome import RunRecord

# `module:function` each worker process calls first; None in normal use. Tests
# point it at their fake driver (tests/fakecuda/worker.py), since a spawned
# process does not inherit the parent's monkeypatching.
WORKER_SETUP: str | None = None

Stop = Callable[[RunRecord], bool]


def _never(record: RunRecord) -> bool:
    return False


class InlineExecutor:
    def __init__(self, options: RunOptions):
        from .worker import Runner
        self.runner = Runner(options.device or 0, options)

    def run(self, tasks: Iterable[RunTask], stop: Stop = _never) -> Iterator[RunRecord]:
        broken = False
        for task in tasks:
            if broken:                  # only when another run follows
                self.runner.recover()
            record = self.runner.execute(task)
            broken = record.broken
            yield record
            if stop(record):
                return

    def close(self) -> None:
        self.runner.close()


class WorkerProcess:
    """One worker process and the task it is running."""

    def __init__(self, context, placement: Placement, options: RunOptions, setup: str | None):
        from .worker import serve
        self.placement = placement
        self.connection, child = context.Pipe()
        self.process = context.Process(
            target=serve, args=(child, placement.ordinal, options, setup, placement.tag),
            name=f"cubinrun-worker-{placement.tag.get('ordinal', placement.ordinal)}",
            daemon=True)
        with _environment(placement.env):       # a spawned process starts with os.environ
            self.process.start()
        child.close()
        self.task: RunTask | None = None
        self.started = 0.0

    def send(self, task: RunTask) -> None:
        self.task, self.started = task, time.perf_counter()
        try:
            self.connection.send(task)
        except OSError:
            pass                    # it has just died: take() reports it against this task

    def tell(self, message) -> None:
        """A message that has no answer (runs.worker.Ahead)."""
        try:
            self.connection.send(message)
        except OSError:
            pass                    # it has just died: the next send() reports it

    def waitables(self) -> list:
        return [self.connection, self.process.sentinel]

    def take(self) -> RunRecord | None:
        """The running task's record if it has ended; a failed record if the worker died."""
        if self.connection.poll():
            try:
                record = self.connection.recv()
            except (EOFError, OSError):
                record = None
            if record is not None:
                self.task = None
                record.device = self.placement.tag or None
                return record
        if self.process.is_alive():
            return None
        self.process.join()
        task, self.task = self.task, None
        return RunRecord(task, EXIT_CUDA, error=f"the worker process running it {_ended(self.process.exitcode)}",
                         error_type="cuda", wall_s=time.perf_counter() - self.started,
                         broken=True, device=self.placement.tag or None)

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        try:
            self.connection.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout)
        self.connection.close()


@contextmanager
def _environment(updates: dict[str, str]):
    """os.environ with `updates`, restored after (only around starting a process)."""
    saved = {name: os.environ.get(name) for name in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _ended(exitcode: int | None) -> str:
    import signal
    if exitcode is not None and exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with status {exitcode} mid-run"


def forward_sigterm(executor):
    """SIGTERM to this process alone ends the executor's workers too (they would
    run on and find no one to answer), then this process as the signal does, so
    its exit status says SIGTERM (143 in a shell). The previous handler, or
    None where a handler cannot be set (not the main thread, Windows)."""
    import signal
    import threading

    from ..platform import WINDOWS
    if WINDOWS or threading.current_thread() is not threading.main_thread():
        return None

    def forward(signum, frame):
        for worker in executor.workers:
            if worker is not None:
                worker.process.terminate()          # SIGTERM, as this process got
        signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    previous = signal.signal(signal.SIGTERM, forward)
    return previous


def restore_sigterm(previous) -> None:
    if previous is not None:
        import signal
        signal.signal(signal.SIGTERM, previous)


class ProcessExecutor:
    """`placements`: one worker each (devices.placements); by default one worker
    on `options.device`, this process's environment unchanged."""

    def __init__(self, options: RunOptions, placements: Sequence[Placement] | None = None,
                 setup: str | None = None):
        import multiprocessing
        self.options = options
        self.context = multiprocessing.get_context("spawn")
        self.placements = list(placements) if placements else [Placement(options.device or 0)]
        self.setup = setup if setup is not None else WORKER_SETUP
        self.notes: list[str] = []
        from ..cache import trust
        trust.check_all()         # an untrusted cache: one warning here, not one per worker
        # Started now, so Python and CUDA start in the workers while the caller goes on.
        self.workers: list[WorkerProcess | None] = [self._start(p) for p in self.placements]
        self._previous_sigterm = forward_sigterm(self)

    def _start(self, placement: Placement) -> WorkerProcess:
        return WorkerProcess(self.context, placement, self.options, self.setup)

    def run(self, tasks: Iterable[RunTask], stop: Stop = _never) -> Iterator[RunRecord]:
        from multiprocessing.connection import wait
        pending = deque(tasks)
        done: dict[int, RunRecord] = {}
        order = [t.index for t in pending]
        position = 0
        while position < len(order):
            while pending and not pending[0].runnable:    # nothing to run: no worker needed
                task = pending.popleft()
                done[task.index] = RunRecord.not_run(task)
            for slot, worker in enumerate(self.workers):
                if pending and pending[0].runnable and (worker is None or worker.task is None):
                    if worker is None or not worker.alive:
                        worker = self.workers[slot] = self._start(self.placements[slot])
                    worker.send(pending.popleft())
            busy = [w for w in self.workers if w is not None and w.task is not None]
            if busy and order[position] not in done:
                wait([handle for w in busy for handle in w.waitables()])
                for slot, worker in enumerate(self.workers):
                    if worker is None or worker.task is None:
                        continue
                    record = worker.take()
                    if record is None:
                        continue
                    done[record.task.index] = record
                    if record.broken:             # it exits (or died): replace it when needed
                        worker.close(timeout=1.0)
                        self.workers[slot] = None
            while position < len(order) and order[position] in done:
                record = done.pop(order[position])
                position += 1
                yield record
                if stop(record):
                    return
            if not busy and not pending and position < len(order) and order[position] not in done:
                raise RuntimeError("executor lost a task")    # a bug, never a user's error

    def close(self) -> None:
        restore_sigterm(self._previous_sigterm)
        self._previous_sigterm = None
        for worker in self.workers:
            if worker is not None:
                worker.close()
        self.workers = []
