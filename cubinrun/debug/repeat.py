"""`--repeat N`: launch N times from the same inputs and compare every buffer
bit for bit with what the first (checked) launch left.

Before each further launch every buffer gets its input again and the scratch
is zeroed, so each run starts from exactly the state the first one did: a
kernel that accumulates into its output (atomics) is compared fairly. Any
buffer may be written by the kernel, so all are compared, as bit patterns of
their element size (-0.0 and 0.0 differ, as do NaN payloads).

No buffer is ever whole in host memory. The inputs are made again block by
block into the staging slots (buffers.DeviceMemory.restore), as for the first
launch. Run 1's buffers are kept on the device (one device-to-device copy of
each: the device memory this costs is checked before anything is allocated),
and on the host only a SHA-256 digest per staging slot of them. Each later
run is downloaded slot by slot and hashed on the worker threads; only a slot
whose digest differs is fetched again, with run 1's copy of it, to find the
first element, the count and the values. So host memory is the staging
slots (and two slots' worth on a difference), and each run costs one upload
and one download of every buffer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..gpu import driver
from ..hostdata.values import to_float64


@dataclass(frozen=True)
class Disagreement:
    """A buffer whose contents were not the same in every run."""
    name: str
    runs: int                        # runs that differ from the first
    total_runs: int
    first_run: int                   # the first run (1-based) that differed
    index: tuple[int, ...]           # the first element that differed in that run
    elements: int                    # elements that differed in that run
    expected: Any                    # run 1's value there
    got: Any                         # first_run's value there

    def describe(self) -> str:
        return (f"{self.name}: {self.runs} of {self.total_runs - 1} later runs differ from run 1; "
                f"run {self.first_run} first at {list(self.index)}: {self.got!r} (run 1: "
                f"{self.expected!r}), {self.elements} element{'s' if self.elements != 1 else ''} "
                f"differ")

    def to_json(self) -> dict:
        return {"buffer": self.name, "runs_differing": self.runs, "first_run": self.first_run,
                "first_index": list(self.index), "elements_differing": self.elements,
                "run1_value": _json_value(self.expected), "value": _json_value(self.got)}


@dataclass
class RepeatReport:
    """The outcome of `--repeat` (a RunResult debug report)."""
    key = "repeat"
    runs: int
    buffers: list[str]
    disagreements: list[Disagreement]

    @property
    def passed(self) -> bool | None:
        return not self.disagreements

    def to_json(self) -> dict:
        return {"runs": self.runs, "passed": self.passed, "buffers": self.buffers,
                "disagreements": [d.to_json() for d in self.disagreements]}

    def render(self, console) -> None:
        if self.passed:
            console.print(f"repeat: {self.runs} runs, every buffer the same bit for bit")
            return
        console.print(f"[red]repeat FAIL[/red]: {self.runs} runs from the same inputs did not "
                      "give the same results")
        for d in self.disagreements:
            console.print(f"  {d.describe()}")


def repeat_and_compare(memory, plan, launch: Callable[[], None], runs: int) -> RepeatReport:
    """Runs 2..`runs` after the checked launch; `launch` queues one launch and
    waits for it. `memory` is the run's buffers.DeviceMemory, `plan` its Plan."""
    buffers = memory.buffers
    first = {name: _Kept(memory, buffer) for name, buffer in buffers.items()}
    differing = dict.fromkeys(buffers, 0)
    found: dict[str, tuple] = {}
    for run in range(2, runs + 1):
        memory.restore(plan)
        launch()
        for name, buffer in buffers.items():
            kept = first[name]
            ranges = kept.differing(memory.staging, buffer.pointer)
            if ranges:
                differing[name] += 1
                if name not in found:
                    found[name] = (run, *kept.difference(buffer.pointer, ranges))
    disagreements = []
    for name, (run, flat, count, expected, got) in found.items():
        spec = buffers[name].spec
        index = tuple(int(i) for i in np.unravel_index(flat, spec.shape))
        disagreements.append(Disagreement(name, differing[name], runs, run, index, count,
                                          _value(expected, spec.dtype), _value(got, spec.dtype)))
    return RepeatReport(runs, list(buffers), disagreements)


class _Kept:
    """Run 1's contents of one buffer: a copy on the device, digests on the host."""

    def __init__(self, memory, buffer):
        spec = buffer.spec
        self.host = spec.dtype.numpy_dtype()
        self.bits = np.dtype(f"u{self.host.itemsize}")      # compared as bit patterns
        self.count = spec.numel
        per_slot = memory.staging.elements(self.host.itemsize)
        self.ranges = [(a, min(self.count, a + per_slot)) for a in range(0, self.count, per_slot)]
        self.copy = memory.alloc_copy(buffer.pointer, spec.nbytes)
        self.digests = self._digests(memory.staging, buffer.pointer)

    def _digests(self, staging, pointer: int) -> list[bytes]:
        from ..hostdata.threads import gather, submit
        futures: list = []

        def read(start: int, stop: int, view) -> list:
            futures.append(submit(_digest, view))
            return futures[-1:]
        staging.download(pointer, self.bits, self.ranges, read)
        return gather(futures)

    def differing(self, staging, pointer: int) -> list[tuple[int, int]]:
        """The ranges whose contents at `pointer` are not run 1's."""
        digests = self._digests(staging, pointer)
        return [r for r, a, b in zip(self.ranges, self.digests, digests, strict=True) if a != b]

    def difference(self, pointer: int, ranges: list[tuple[int, int]]):
        """(flat index, differing count, run 1's element, this run's element) over `ranges`."""
        first, count = None, 0
        for start, stop in ranges:
            a, b = self._fetch(self.copy, start, stop), self._fetch(pointer, start, stop)
            found = first_difference(a.view(self.host), b.view(self.host))
            if found is not None:
                count += found[1]
                first = first or (start + found[0], found[2], found[3])
        return first[0], count, first[1], first[2]

    def _fetch(self, pointer: int, start: int, stop: int) -> np.ndarray:
        out = np.empty(stop - start, dtype=self.bits)
        driver.copy_to_host(out, pointer + start * self.bits.itemsize)
        return out


def _digest(view: np.ndarray) -> bytes:
    import hashlib
    return hashlib.sha256(view).digest()        # releases the GIL: the workers hash in parallel


def first_difference(a: np.ndarray, b: np.ndarray):
    """(flat index, differing count, a's element, b's element) of the first
    element whose bits differ, or None when the arrays are identical."""
    bits = np.dtype(f"u{a.dtype.itemsize}")
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    differ = flat_a.view(bits) != flat_b.view(bits)
    positions = np.flatnonzero(differ)
    if positions.size == 0:
        return None
    k = int(positions[0])
    return k, int(positions.size), flat_a[k:k + 1], flat_b[k:k + 1]


def _value(element: np.ndarray, dtype) -> Any:
    """One element as a plain number (floats by value, whatever their storage)."""
    if dtype.kind == "float":
        return float(to_float64(element, dtype)[0])
    return element.item() if dtype.kind != "bool" else bool(element[0])


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return value
