"""`--repeat N`: launch N times from the same inputs and compare every buffer
bit for bit with what the first (checked) launch left.

Before each further launch every buffer gets its input again and the scratch
is zeroed, so each run starts from exactly the state the first one did: a
kernel that accumulates into its output (atomics) is compared fairly. Any
buffer may be written by the kernel, so all are compared, as bit patterns of
their element size (-0.0 and 0.0 differ, as do NaN payloads). Host memory:
one copy of every buffer from the first run, plus one buffer at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import driver
from ..hostdata import to_float64


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
    first = {name: buffer.download() for name, buffer in buffers.items()}
    differing = dict.fromkeys(buffers, 0)
    found: dict[str, tuple] = {}
    for run in range(2, runs + 1):
        _restore_inputs(memory, plan)
        launch()
        for name, buffer in buffers.items():
            difference = first_difference(first[name], buffer.download())
            if difference is not None:
                differing[name] += 1
                found.setdefault(name, (run, *difference))
    disagreements = []
    for name, (run, flat, count, expected, got) in found.items():
        dtype = buffers[name].spec.dtype
        index = tuple(int(i) for i in np.unravel_index(flat, first[name].shape))
        disagreements.append(Disagreement(name, differing[name], runs, run, index, count,
                                          _value(expected, dtype), _value(got, dtype)))
    return RepeatReport(runs, list(buffers), disagreements)


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


def _restore_inputs(memory, plan) -> None:
    for buffer in memory.buffers.values():
        driver.copy_to_device(buffer.pointer, buffer.host)
    for pointer, scratch in ((memory.global_scratch, plan.global_scratch),
                             (memory.profile_scratch, plan.profile_scratch)):
        if pointer:
            driver.memset_async(pointer, 0, scratch.nbytes, 0)
    driver.synchronize("restoring the inputs for --repeat")


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
