"""One pool of worker threads for the host's bulk work on buffers: making input
values, filling staging memory and checking outputs, block by block.

NumPy releases the GIL inside its loops (ufuncs, casts, copies and the
`numpy.random` fills), so threads scale over cores for blocks of ~1M elements.
Workers never call the driver: a CUDA context is current per thread, and the
main thread keeps it. Tasks must not wait on tasks submitted after them (the
pool runs them in submission order, so waiting on earlier ones is safe).
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def worker_count() -> int:
    """The cores this process may run on (`CUBINRUN_THREADS` overrides)."""
    override = os.environ.get("CUBINRUN_THREADS", "").strip()
    if override.isdigit() and int(override) > 0:
        return int(override)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):           # not on Linux
        return max(1, os.cpu_count() or 1)


def pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _keep_freed_memory()
            _pool = ThreadPoolExecutor(worker_count(), thread_name_prefix="cubinrun")
        return _pool


def _keep_freed_memory() -> None:
    """Let glibc keep the blocks' freed temporaries for the next block.

    Every block allocates and frees a few MB of arrays. By default glibc hands
    the top of a heap back to the OS once it passes a few MB (its trim threshold
    adapts to the largest block freed), so every block pays page faults for
    memory it just freed: 137 000 faults for a 2^24-element check, which then
    took 2.7x the CPU time. Peak memory does not change (it is what the blocks
    use at once); other C libraries are left alone."""
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)     # arrays below it from the heaps, reused
    mallopt(m_trim_threshold, 512 << 20)


def on_thread(fn: Callable[..., T], *args, name: str = "cubinrun-ahead") -> Future[T]:
    """fn(*args) on a thread of its own, outside the pool (so it may use the pool),
    as a daemon: work started ahead that turns out unneeded (the run failed
    first) never holds up the process's exit."""
    future: Future[T] = Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(*args))
            except BaseException as exc:        # noqa: BLE001 - handed to the waiter
                future.set_exception(exc)
    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def submit(fn: Callable[..., T], *args) -> Future[T]:
    return pool().submit(fn, *args)


_background: ThreadPoolExecutor | None = None
LOWEST_PRIORITY = 19                # nice


def background_pool() -> ThreadPoolExecutor:
    """Threads at the lowest priority, for work done while another process times
    a kernel on this machine (a worker of `launch --processes` getting its next
    run ready): the scheduler gives the timing process's thread a core first,
    so its launches are never held up by ours. Linux sets a thread's nice
    value on its own; elsewhere the pool is one thread."""
    global _background
    with _lock:
        if _background is None:
            lowered = hasattr(os, "setpriority") and sys.platform.startswith("linux")
            _background = ThreadPoolExecutor(
                worker_count() if lowered else 1, thread_name_prefix="cubinrun-background",
                initializer=_lowest_priority if lowered else None)
        return _background


def _lowest_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST_PRIORITY)
    except OSError:
        pass                        # the default priority: slower to yield, still correct


def run_all_in_background(tasks: Iterable[Callable[[], T]]) -> list[T]:
    """run_all on background_pool()."""
    futures = [background_pool().submit(task) for task in tasks]
    return gather(futures)


def run_all(tasks: Iterable[Callable[[], T]]) -> list[T]:
    """Run the tasks on the pool and return their results in order; the first
    exception (in order) is raised after every task has finished, so no task
    still writes into memory the caller is about to free."""
    futures = [submit(task) for task in tasks]
    return gather(futures)


def gather(futures: list[Future[T]]) -> list[T]:
    """Results in order, waiting for all of them before raising the first error."""
    error: BaseException | None = None
    results: list[T] = []
    for future in futures:
        try:
            results.append(future.result())
        except BaseException as exc:        # noqa: BLE001 - re-raised below
            error = error or exc
    if error is not None:
        raise error
    return results


def ordered(tasks: Iterable[Callable[[], T]], ahead: int | None = None) -> Iterator[T]:
    """Results of the tasks in order, as they are needed, with at most `ahead`
    (twice the workers) running or waiting to be taken: the memory of a stream
    of blocks written in order stays a few blocks, whatever their number. On an
    error (or when the caller stops early) the tasks started are waited for."""
    ahead = ahead or 2 * worker_count()
    running: deque[Future[T]] = deque()
    try:
        for task in tasks:
            running.append(submit(task))
            if len(running) >= ahead:
                yield running.popleft().result()
        while running:
            yield running.popleft().result()
    finally:
        for future in running:
            future.cancel() or future.exception()
