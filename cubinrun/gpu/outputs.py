"""The outputs after a launch: downloaded through the staging slots, checked and
saved slot by slot while the next slots arrive.

Each checked output is compared box by box on the worker threads (check.Checker)
straight from the pinned slot it arrived in, its inputs read again block by
block (hostdata.InputValues); a saved output is written to its .npy in order on
this thread. So no output or input is ever whole in host memory.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Outputs:
    checks: list = field(default_factory=list)        # check.CheckResult, in the spec's order
    saved: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)   # "download", "check"


def check_and_save(spec, memory) -> Outputs:
    """`memory`: the launch's buffers.DeviceMemory, after the kernel finished."""
    from ..hostdata.check import Checker
    env = spec.expression_env()
    inputs = {name: b.values for name, b in memory.buffers.items()}
    checkers = {}
    for check in spec.checks:
        buffer = spec.buffers[check.output]
        checkers[check.output] = Checker(check, buffer.shape, buffer.dtype, inputs, env)
    began, waited = time.perf_counter(), memory.staging.waits.copies
    parts = {}
    for buffer in spec.buffers.values():
        if buffer.name in checkers or buffer.save:
            parts[buffer.name] = _download(memory, buffer, checkers.get(buffer.name))
    done = Outputs([checkers[c.output].result(parts[c.output]) for c in spec.checks],
                   [str(b.save) for b in spec.buffers.values() if b.save])
    download = memory.staging.waits.copies - waited
    done.seconds = {"download": download, "check": time.perf_counter() - began - download}
    return done


def _download(memory, buffer, checker) -> list:
    """One output, slot by slot: the parts of its check, in box order."""
    from ..hostdata.check import CHUNK, boxes
    from ..hostdata.values import NpyWriter
    from ..hostdata.threads import gather, submit
    staging, host = memory.staging, buffer.dtype.numpy_dtype()
    groups = _group(checker.boxes if checker else boxes(buffer.shape, CHUNK),
                    staging.elements(host.itemsize))
    writer = NpyWriter(buffer.save, buffer.shape, host, buffer.dtype) if buffer.save else None
    futures: list = []

    def read(start: int, stop: int, view) -> list:
        tasks = [submit(checker.compare, box, view[box[0] - start:box[1] - start])
                 for box in groups[start, stop]] if checker else []
        if writer is not None:
            writer.write(view)
        futures.extend(tasks)
        return tasks
    try:
        staging.download(memory.buffers[buffer.name].pointer, host, list(groups), read)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if writer is not None:
        writer.close()
    return gather(futures)


def _group(boxes: list, capacity: int) -> dict[tuple[int, int], list]:
    """Consecutive boxes gathered into flat ranges of at most `capacity` elements."""
    groups: dict[tuple[int, int], list] = {}
    current: list = []
    for box in boxes:
        if current and box[1] - current[0][0] > capacity:
            groups[current[0][0], current[-1][1]] = current
            current = []
        current.append(box)
    if current:
        groups[current[0][0], current[-1][1]] = current
    return groups
