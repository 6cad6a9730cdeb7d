"""Whole-array references kept from one run to the next (a sweep's points).

A matmul's reference costs far more than its check, and a sweep over tile
sizes checks the same product at every point. A reference is kept under a
key saying what it is (the spec, the expression or the Python function, the
region) with the fingerprint of every name it read: an input's fingerprint
is its buffer's description (dtype, shape, init with its seed, position),
plus the file's size and time for a `file:` init; a var's is its value. A
later run reuses it only when every name it read has the same fingerprint
now, so a point that changes a var the reference does not read hits the
cache and one that changes an input's shape does not.

Entries are dropped oldest first to stay within half the check memory
(CUBINRUN_CHECK_MEMORY): the other half is for the reference being made.
Cached arrays are read-only, so no caller can change what a later run gets.
CUBINRUN_REFERENCE_CACHE=0 turns the cache off (bench/data/check_sweep.py measures
what it saves that way).
"""
from __future__ import annotations

import threading
import os
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterable

_UNCACHEABLE = object()


def fingerprint(value: Any) -> Hashable:
    """What an input or var is, for comparing runs; _UNCACHEABLE for a plain array
    (a test's or a caller's: no description says where it came from)."""
    buffer = getattr(value, "buffer", None)
    if buffer is not None:                      # hostdata.InputValues
        path = buffer.init.path
        stat = None
        if path is not None:
            try:
                st = path.stat()
                stat = (st.st_size, st.st_mtime_ns)
            except OSError:
                return _UNCACHEABLE
        return ("input", repr(buffer), stat)
    if isinstance(value, (bool, int, float)):
        return ("number", type(value).__name__, value)
    return _UNCACHEABLE


def described(fp: Hashable) -> bool:
    """Whether a fingerprint says what the value is (not a plain array's)."""
    return fp is not _UNCACHEABLE


class ReferenceCache:
    def __init__(self, budget: Callable[[], int]):
        self._budget = budget
        self._entries: OrderedDict[tuple, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable, reads: Iterable[tuple[str, Hashable]] | None = None,
            current: Callable[[str], Hashable] | None = None) -> Any:
        """The value stored under `key` whose reads all match `current(name)` now
        (`reads` given: those exact reads), or None."""
        with self._lock:
            for (k, depends), (value, _) in reversed(self._entries.items()):
                if k != key:
                    continue
                if reads is not None and tuple(reads) != depends:
                    continue
                if current is not None and any(current(n) != fp for n, fp in depends):
                    continue
                self._entries.move_to_end((k, depends))
                self.hits += 1
                return value
            self.misses += 1
            return None

    def put(self, key: Hashable, reads: Iterable[tuple[str, Hashable]], value: Any,
            nbytes: int) -> None:
        depends = tuple(reads)
        if any(fp is _UNCACHEABLE for _, fp in depends) or not enabled():
            return
        limit = self._budget() // 2
        if nbytes > limit:
            return
        with self._lock:
            self._entries[(key, depends)] = (value, nbytes)
            total = sum(n for _, n in self._entries.values())
            while total > limit and len(self._entries) > 1:
                _, (_, dropped) = self._entries.popitem(last=False)
                total -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0


def enabled() -> bool:
    return os.environ.get("CUBINRUN_REFERENCE_CACHE", "1").strip() not in ("0", "off", "no")


def _check_memory() -> int:
    from .host_memory import check_memory_limit
    return check_memory_limit()


CACHE = ReferenceCache(_check_memory)       # one per process: a sweep's runs share it
