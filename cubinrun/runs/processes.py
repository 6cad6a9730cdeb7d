"""`launch --processes N`: each run timed in N fresh worker processes, one
after another on one GPU, its samples pooled into one result (pooling.py).

A kernel's median moves between processes by more than it varies inside
one (results/process_noise.py), so a verdict that should survive the next
CI job needs several processes on each side, as pyperf spreads a benchmark
over worker processes. The workers start together (Python and CUDA open in
parallel), then take the GPU in turn: a run goes to the first worker, which
checks the outputs, then to each of the others, which only time it; no two
workers ever use the GPU at once, so none times another's work. Each spends
1/N of the run's warm-up and timing budget, so N processes cost the GPU
what one did, plus each process's set-up.

While one worker has its turn, the others get their next run ready on the
host (spec, plan, binary, launcher, inputs: runs.worker.Ahead), so a turn is
the upload and the GPU's work: a worker is told its next run as soon as it
hands back its record of this one.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator

from ..pipeline.session import RunOptions
from .devices import Placement
from .executor import ProcessExecutor, Stop, WorkerProcess, _never, forward_sigterm
from .worker import Ahead
from .expand import RunTask
from .outcome import RunRecord
from .pooling import pooled


class ProcessesExecutor:
    def __init__(self, options: RunOptions, processes: int, setup: str | None = None):
        import multiprocessing

        from ..cache import trust
        from . import executor
        self.options, self.processes = options, processes
        self.setup = setup if setup is not None else executor.WORKER_SETUP
        self.context = multiprocessing.get_context("spawn")
        self.notes: list[str] = []
        self.placement = Placement(options.device or 0)
        trust.check_all()
        share = 1.0 / processes
        # the first checks (and runs --repeat and --energy); the others only time
        self.worker_options = [replace(options, keep_samples=True, budget_share=share)] + [
            replace(options, keep_samples=True, budget_share=share, check=False, repeat=1,
                    energy=False, progress=False)] * (processes - 1)
        self.workers: list[WorkerProcess | None] = [self._start(k) for k in range(processes)]
        self._previous_sigterm = forward_sigterm(self)

    def _start(self, k: int) -> WorkerProcess:
        return WorkerProcess(self.context, self.placement, self.worker_options[k], self.setup)

    def run(self, tasks: Iterable[RunTask], stop: Stop = _never) -> Iterator[RunRecord]:
        tasks = list(tasks)
        runnable = [t for t in tasks if t.runnable]
        following = {a.index: b for a, b in zip(runnable, runnable[1:])}
        if runnable:                        # the first worker gets it ready in its own turn
            for k in range(1, self.processes):
                self._ahead(k, runnable[0])
        for task in tasks:
            if not task.runnable:
                record = RunRecord.not_run(task)
            else:
                records = []
                for k in range(self.processes):
                    records.append(self._run_on(k, task))
                    if task.index in following:
                        self._ahead(k, following[task.index])
                    if records[-1].exit_code != 0:
                        break               # a failed check or an error: nothing to time
                record = pooled(records, self.options.keep_samples)
            yield record
            if stop(record):
                return

    def _ahead(self, k: int, task: RunTask) -> None:
        """Worker k gets `task` ready while the others take their turns (a worker
        gone by then is started afresh when the task reaches it)."""
        worker = self.workers[k]
        if worker is not None and worker.alive:
            worker.tell(Ahead(task))

    def _run_on(self, k: int, task: RunTask) -> RunRecord:
        """The task on worker k (started afresh if it is gone), waited for."""
        from multiprocessing.connection import wait
        worker = self.workers[k]
        if worker is None or not worker.alive:
            worker = self.workers[k] = self._start(k)
        worker.send(task)
        while True:
            wait(worker.waitables())
            record = worker.take()
            if record is not None:
                break
        if record.broken:                   # it exits (or died): the next task starts another
            worker.close(timeout=1.0)
            self.workers[k] = None
        record.device = None
        return record

    # the same workers and SIGTERM handler as ProcessExecutor's, ended the same way
    close = ProcessExecutor.close
