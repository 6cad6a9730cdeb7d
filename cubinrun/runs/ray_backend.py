"""`--ray [ADDRESS]`: the runs as Ray actors, each holding one GPU
(`num_gpus=1`, or 1/N of one with `--workers-per-gpu N`), behind the
executors' interface (`run(tasks, stop)`, records in input order).

The cluster: an existing one (`auto`, `HOST:PORT`, `ray://HOST:PORT`), or
without an address a local one started for the command with this machine's
GPUs (as CUDA counts them) and stopped after it; a process that already
called `ray.init` keeps its own. One actor per GPU of the cluster (times N),
at most one per run; each opens CUDA once (`worker.Runner`, as a local worker
does) and reports its device. Different GPU models are refused unless
`--mixed-devices`, as with `--devices`, and so is a cubinrun version other
than this one. Actors that get no GPU within `start_timeout` seconds (a busy
cluster) are given up; with none at all the command fails.

What travels: each run's files (bundle.py) go into Ray's object store once
per command and file, and each actor writes those it lacks into its own
mirror; the launcher and any NVRTC compile are built on the worker, cached
per node as usual. Saved outputs come back and are written here.

A lost actor (its process or node died, e.g. a kernel that crashes the
process) fails only the run it was running, with a CUDA error (exit 4)
saying so, and is replaced for the next runs if the cluster still has a GPU
for it. Runs are not retried: a retry would run a crashing kernel twice and
a run that failed once is what a local run reports too. An actor whose run
broke its CUDA context is replaced the same way.
"""
from __future__ import annotations

import os
import re
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from ..errors import EXIT_CUDA, CubinrunError, UsageError
from ..pipeline.session import RunOptions
from .devices import check_models, check_workers_per_gpu
from .expand import RunTask
from .outcome import RunRecord

START_TIMEOUT_S = 120.0


def require_ray():
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray, an optional extra: pip install 'cubinrun[ray]'") \
            from None
    return ray


class RayWorker:
    """The actor (made remote at run time, so this module imports without Ray)."""

    def __init__(self, options: RunOptions, setup: str | None):
        os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"     # before CUDA starts, as locally
        from .bundle import Mirror
        from .worker import Runner, run_setup
        run_setup(setup)
        import ray
        ids = ray.get_gpu_ids()
        self.tag = {"ordinal": _ordinal(ids[0]) if ids else 0}
        self.runner = Runner(0, options, self.tag)
        self.mirror = Mirror()

    def describe(self) -> dict:
        import socket

        from .. import __version__
        from ..gpu import driver
        device = self.runner.open()
        self.tag.update(name=device.name, uuid=driver.device_uuid(device.handle),
                        host=socket.gethostname())
        return {**self.tag, "version": __version__, "pid": os.getpid()}

    def run(self, task: RunTask, manifest: dict[str, str], contents: dict[str, Any],
            cwd: str):
        import ray

        from .bundle import run_mirrored
        missing = self.mirror.missing(manifest)
        if missing:
            data = ray.get([contents[manifest[path]] for path in missing])
            for path, blob in zip(missing, data):
                self.mirror.write(path, blob)
        return run_mirrored(self.runner, self.mirror, task, cwd)

    def close(self) -> None:
        self.runner.close()
        self.mirror.close()


class RemoteError(CubinrunError):
    """A cubinrun error raised on a worker that did not come back as itself."""

    def __init__(self, message: str, exit_code: int):
        self.exit_code = exit_code
        super().__init__(message)


def remote_cause(error: BaseException) -> BaseException:
    """What a worker raised, from Ray's wrapper of it. Ray's wrapper also
    subclasses the cause's class, but its text is the whole remote traceback;
    where the cause itself did not come back (it would not unpickle), a
    cubinrun error keeps its one line: the traceback's last, less the class."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException) and type(cause).__name__ != type(error).__name__:
        return cause
    if isinstance(error, CubinrunError):
        last = (str(error).strip().splitlines() or [""])[-1]
        message = re.sub(r"^[\w.]+(Error|Exception|Limit\w*): ", "", last)
        return RemoteError(message, error.exit_code)
    return error


def _ordinal(gpu_id) -> int | str:
    try:
        return int(gpu_id)
    except (TypeError, ValueError):
        return str(gpu_id)


@dataclass
class _Actor:
    handle: Any
    ready: Any = None                   # the describe() reference while starting
    deadline: float = 0.0
    tag: dict = field(default_factory=dict)
    task: RunTask | None = None
    reference: Any = None               # the run() reference while busy
    started: float = 0.0


class RayExecutor:
    def __init__(self, options: RunOptions, address: str | None = None,
                 workers_per_gpu: int = 1, mixed: bool = False, limit: int | None = None,
                 setup: str | None = None, start_timeout: float = START_TIMEOUT_S):
        from .executor import WORKER_SETUP
        self.ray = ray = require_ray()
        self.options, self.mixed = options, mixed
        self.setup = setup if setup is not None else WORKER_SETUP
        self.start_timeout = start_timeout
        self.notes: list[str] = []
        self._failures: list[str] = []          # why actors died while starting
        self.connected = False                  # this executor called ray.init
        self.actors: list[_Actor] = []
        self._stored: dict[tuple, tuple[str, Any]] = {}      # (path, mtime, size) -> digest, ref
        self._manifests: dict[tuple, dict[str, str]] = {}
        self._cwd = os.getcwd()
        check_workers_per_gpu(workers_per_gpu)
        if not ray.is_initialized():
            self._connect(address)
        _driver_messages_to_stderr()
        try:
            gpus = ray.cluster_resources().get("GPU", 0)
            if not gpus:
                raise UsageError(f"--ray: the Ray cluster has no GPUs "
                                 f"({_resources_text(ray.cluster_resources())})")
            count = max(int(gpus * workers_per_gpu + 1e-9), 1)
            if limit is not None:
                count = min(count, max(limit, 1))
            self.remote = ray.remote(RayWorker).options(
                num_gpus=1 / workers_per_gpu, num_cpus=0, max_restarts=0, max_task_retries=0)
            self.actors = [self._start() for _ in range(count)]
            self._await_start()
        except BaseException:
            self.close()
            raise

    # -- the cluster and the actors --

    def _connect(self, address: str | None) -> None:
        import logging
        ray = self.ray
        settings = dict(include_dashboard=False, log_to_driver=False,
                        logging_level=logging.ERROR, configure_logging=True)
        if address in (None, "local"):
            from .devices import enumerate_devices
            ray.init(address="local", num_gpus=len(enumerate_devices()), **settings)
        else:
            try:
                ray.init(address=address, **settings)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UsageError(f"--ray {address}: cannot connect: {_first_line(exc)}") \
                    from None
        self.connected = True

    def _start(self) -> _Actor:
        handle = self.remote.remote(self.options, self.setup)
        return _Actor(handle, handle.describe.remote(), time.monotonic() + self.start_timeout)

    def _await_start(self) -> None:
        """Wait for every first actor (or the timeout); check models and versions."""
        from .. import __version__
        starting = [a for a in self.actors if a.ready is not None]
        while starting:
            wait = max(min(a.deadline for a in starting) - time.monotonic(), 0.0)
            done, _ = self.ray.wait([a.ready for a in starting], num_returns=len(starting),
                                    timeout=wait)
            for actor in [a for a in starting if a.ready in done]:
                self._started(actor)
            self._drop_late()
            starting = [a for a in self.actors if a.ready is not None]
        if not self.actors and self._failures:
            raise UsageError(f"--ray: no worker started ({self._failures[0]})")
        if not self.actors:
            raise UsageError(f"--ray: no worker got a GPU within {self.start_timeout:.0f} s "
                             "(are the cluster's GPUs busy?)")
        versions = {a.tag.pop("version", __version__) for a in self.actors}
        if versions != {__version__}:
            raise UsageError(f"--ray: the workers run cubinrun {', '.join(sorted(versions))}, "
                             f"this is {__version__}: install the same version everywhere")
        check_models([_Named(a.tag) for a in self.actors], self.mixed, flag="--ray")
        self._mark_shared()

    def _started(self, actor: _Actor) -> None:
        """Its describe() came back: a tag, or an error that ends the command."""
        reference, actor.ready = actor.ready, None
        try:
            actor.tag = self.ray.get(reference)
            actor.tag.pop("pid", None)
        except self.ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            self._kill(actor)
            if isinstance(cause, CubinrunError):
                raise cause from None
            raise
        except self.ray.exceptions.RayError as exc:
            self._kill(actor)
            self._failures.append(_death(exc))
            self.notes.append(f"a Ray worker died while starting ({self._failures[-1]})")

    def _drop_late(self) -> None:
        now = time.monotonic()
        for actor in [a for a in self.actors if a.ready is not None and a.deadline <= now]:
            self._kill(actor)
            self.notes.append(f"a Ray worker got no GPU within {self.start_timeout:.0f} s; "
                              "going on without it")

    def _mark_shared(self) -> None:
        for actor in self.actors:
            same = [a for a in self.actors if (a.tag.get("host"), a.tag.get("uuid")) ==
                    (actor.tag.get("host"), actor.tag.get("uuid"))]
            if len(same) > 1:
                actor.tag["shared_by"] = len(same)

    def _kill(self, actor: _Actor) -> None:
        if actor in self.actors:
            self.actors.remove(actor)
        try:
            self.ray.kill(actor.handle, no_restart=True)
        except Exception:           # already gone
            pass

    def _replace(self, actor: _Actor) -> None:
        self._kill(actor)
        self.actors.append(self._start())

    def tags(self) -> list[dict]:
        return [a.tag for a in self.actors]

    # -- the files --

    def _manifest(self, task: RunTask) -> tuple[dict[str, str], dict[str, Any]]:
        from .bundle import digest, needed_files
        key = (task.spec, tuple(sorted(task.overrides.items())))
        if key not in self._manifests:
            manifest = {}
            for path in needed_files(task):
                stat = path.stat()
                stamp = (str(path), stat.st_mtime_ns, stat.st_size)
                if stamp not in self._stored:
                    data = path.read_bytes()
                    self._stored[stamp] = (digest(data), self.ray.put(data))
                manifest[str(path)] = self._stored[stamp][0]
            self._manifests[key] = manifest
        manifest = self._manifests[key]
        references = {d: ref for (d, ref) in self._stored.values() if d in manifest.values()}
        return manifest, references

    # -- the runs --

    def run(self, tasks: Iterable[RunTask], stop=lambda record: False) -> Iterator[RunRecord]:
        from .bundle import write_saved
        pending = deque(tasks)
        order = [t.index for t in pending]
        done: dict[int, RunRecord] = {}
        saved: dict[int, dict] = {}             # written in input order, as locally
        position = 0
        while position < len(order):
            while pending and not pending[0].runnable:
                task = pending.popleft()
                done[task.index] = RunRecord.not_run(task)
            for actor in self.actors:
                if pending and pending[0].runnable and actor.ready is None \
                        and actor.task is None:
                    self._send(actor, pending.popleft())
            busy = [a for a in self.actors if a.task is not None]
            starting = [a for a in self.actors if a.ready is not None]
            if order[position] not in done:
                if not busy and not starting:
                    if not pending:
                        raise RuntimeError("executor lost a task")    # a bug
                    for task in pending:        # nobody left to run them
                        done[task.index] = RunRecord(
                            task, EXIT_CUDA, error="no Ray worker is left to run it",
                            error_type="cuda")
                    pending.clear()
                else:
                    self._wait(busy, starting, done, saved)
            while position < len(order) and order[position] in done:
                write_saved(saved.pop(order[position], {}))
                record = done.pop(order[position])
                position += 1
                yield record
                if stop(record):
                    return

    def _send(self, actor: _Actor, task: RunTask) -> None:
        manifest, references = self._manifest(task)
        actor.task, actor.started = task, time.perf_counter()
        actor.reference = actor.handle.run.remote(task, manifest, references, self._cwd)

    def _wait(self, busy, starting, done, saved) -> None:
        references = [a.reference for a in busy] + [a.ready for a in starting]
        timeout = None
        if starting:
            timeout = max(min(a.deadline for a in starting) - time.monotonic(), 0.0)
        ready, _ = self.ray.wait(references, num_returns=1, timeout=timeout)
        for actor in [a for a in starting if a.ready in ready]:
            self._started(actor)
            if actor in self.actors and not self.mixed and self._other_model(actor):
                self._kill(actor)
                self.notes.append(f"a replacement Ray worker got a {actor.tag.get('name')}; "
                                  "going on without it")
        self._drop_late()
        for actor in [a for a in busy if a.reference in ready]:
            task, reference = actor.task, actor.reference
            actor.task = actor.reference = None
            try:
                record, saved[task.index] = self.ray.get(reference)
            except self.ray.exceptions.RayTaskError as exc:   # raised around the run
                record = RunRecord.failed(task, remote_cause(exc),
                                          time.perf_counter() - actor.started).portable()
                record.log = str(exc)
            except self.ray.exceptions.RayError as exc:       # the actor or its node is gone
                record = RunRecord(task, EXIT_CUDA,
                                   error=f"the Ray worker running it died ({_death(exc)})",
                                   error_type="cuda", broken=True)
                record.wall_s = time.perf_counter() - actor.started
            record.device = actor.tag or None
            done[task.index] = record
            if record.broken:
                self._replace(actor)
        self._mark_shared()

    def _other_model(self, actor: _Actor) -> bool:
        names = {a.tag.get("name") for a in self.actors if a is not actor and a.ready is None}
        return bool(names) and actor.tag.get("name") not in names

    def close(self) -> None:
        for actor in list(self.actors):
            if actor.ready is None:
                try:
                    self.ray.get(actor.handle.close.remote(), timeout=10)
                except Exception:               # gone, or stuck: killed below
                    pass
            self._kill(actor)
        self.actors = []
        if self.connected:
            # Disconnect now (and stop the cluster if ours): left to Ray's exit
            # hook, the same shutdown takes ~0.5 s longer (it waits out its logs).
            self.ray.shutdown()
            self.connected = False


@dataclass(frozen=True)
class _Named:
    """What check_models reads from an actor's tag."""
    tag: dict

    @property
    def name(self) -> str:
        return self.tag.get("name", "?")

    @property
    def ordinal(self) -> str:
        host = self.tag.get("host")
        return f"{host}:{self.tag.get('ordinal')}" if host else str(self.tag.get("ordinal"))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _death(exc: BaseException) -> str:
    """A short reason from Ray's long actor-death message: 'its worker process has
    died', 'its node has died', ..."""
    text = str(exc)
    if "error raised in its creation task" in text:       # the traceback's last line says it
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return f"it failed to start: {lines[-1]}"
    match = re.search(r"The actor is dead because (.+?)[.:]", text)
    if match:
        return match.group(1)
    if type(exc).__name__ == "OutOfMemoryError":
        return "Ray's memory monitor killed it: the node ran low on memory"
    return _first_line(exc)


def _resources_text(resources: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(resources.items())
                     if k in ("CPU", "GPU")) or "none"


def _driver_messages_to_stderr() -> None:
    """Ray prints the raylet's error messages (a worker died, ...) on this process's
    stdout, which carries `--json` and `--jsonl -`: send them to stderr, less the
    worker deaths that the failed run's own error line reports. The hook is
    Ray's private `print_to_stdstream`; if it moves, the messages stay where Ray puts
    them rather than breaking the run."""
    try:
        from ray._private import worker as ray_worker
        original = ray_worker.print_to_stdstream
    except (ImportError, AttributeError):
        return
    if getattr(original, "_cubinrun", False):
        return

    def to_stderr(data, ignore_prefix):
        lines = [line for line in data.get("lines", [])
                 if not line.startswith("A worker died or was killed")]   # the run says so
        if lines:
            original({**data, "lines": lines, "is_err": True}, ignore_prefix)
    to_stderr._cubinrun = True
    ray_worker.print_to_stdstream = to_stderr
    sys.stderr.flush()
