"""The outputs after a launch: checked on the device where it can
(gpu/device_data.py: an elementwise `expect:`, only counts and the first
mismatches come back), else downloaded through the staging slots, checked and
saved slot by slot while the next slots arrive.

Each checked output is compared box by box on the worker threads (check.Checker)
straight from the pinned slot it arrived in, its inputs read again block by
block (hostdata.InputValues); a saved output is written to its .npy in order on
this thread. So no output or input is ever whole in host memory, except where
a check asks for it: an output with a region check (`"x[1:-1, :]"`) is
downloaded whole and each of its checks compares its slice, and a checked
global is read back whole (module_globals.read). Their size counts against
CUBINRUN_CHECK_MEMORY (check.check_reference).
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field


@dataclass
class Outputs:
    checks: list = field(default_factory=list)        # check.CheckResult, in the spec's order
    saved: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)   # "download", "check"


# One run's checkers are made at a time in a process: a run that failed before
# its check leaves its reference being made (nobody waits for it), and the next
# run's waits here rather than making a second one beside it, so the host never
# holds more than one reference in the making (and the next run then often
# finds it in the reference cache).
_making = threading.Lock()


def make_checkers(spec, inputs: dict, names: set[str] | None = None) -> list:
    """A check.Checker per check of the spec (those named in `names`, if given),
    reading `inputs` (InputValues by name); a check against a whole-array
    reference (a matmul's) makes it now."""
    from ..errors import SpecError
    from ..hostdata.check import Checker
    env = spec.expression_env()
    outputs = {**spec.buffers, **spec.globals}
    checkers = []
    with _making:
        for check in spec.checks:
            if names is not None and check.name not in names:
                continue
            target = outputs[check.output]
            try:
                checkers.append(Checker(check, target.shape, target.dtype, inputs, env,
                                        scope=str(spec.path)))
            except SpecError as exc:        # a region's field path holds brackets: its line
                raise exc.located(line=check.line if check.region is not None else None) \
                    from None
    return checkers


def checkers_ahead(spec, inputs: list) -> Future | None:
    """make_checkers on a thread, started before the upload, so that a reference
    (a 4096^3 matmul's takes ~1 s on 16 cores) is made while the kernel loads,
    the buffers fill and the kernel runs. None (made after the launch) when
    nothing is checked or a check reads a module global, whose values are bound
    only once the module is loaded."""
    if not spec.checks or spec.globals:
        return None
    from ..hostdata.threads import on_thread
    by_name = dict(zip(spec.buffers, inputs, strict=True))
    return on_thread(make_checkers, spec, by_name, _host_checks(spec), name="cubinrun-references")


def _host_checks(spec) -> set[str]:
    """The checks the host makes a Checker for ahead: those the device cannot run
    (a device check's Checker is made only if the device run falls back)."""
    from .device_data import checks_on_device, enabled
    eligible = checks_on_device(spec) if enabled() else {}
    return {check.name for check in spec.checks if check.name not in eligible}


def check_and_save(spec, memory, ahead: Future | None = None) -> Outputs:
    """`memory`: the launch's buffers.DeviceMemory, after the kernel finished;
    `ahead`: the checkers from checkers_ahead."""
    inputs = {name: b.values for name, b in memory.buffers.items()}
    inputs.update((name, g.values) for name, g in memory.globals.items())
    checkers = ahead.result() if ahead is not None else make_checkers(spec, inputs,
                                                                      _host_checks(spec))
    began, waited = time.perf_counter(), memory.staging.waits.copies
    on_device = _device_checks(spec, memory)
    made = {c.check.name for c in checkers}
    fallback = {c.name for c in spec.checks} - made - set(on_device)
    if fallback:                        # device checks the device could not run after all
        checkers += make_checkers(spec, inputs, fallback)
    on_device.update(_reference_checks(spec, memory, checkers))
    parts: dict[int, list] = {}
    for buffer in spec.buffers.values():
        mine = [c for c in checkers if c.check.output == buffer.name
                and c.check.name not in on_device]
        if any(c.check.region is not None for c in mine):
            whole = _download_whole(memory, buffer)
            for c in mine:
                parts[id(c)] = _compare_whole(c, whole)
        elif mine or buffer.save:
            found = _download(memory, buffer, mine[0] if mine else None)
            if mine:
                parts[id(mine[0])] = found
    if any(c.check.output in memory.globals for c in checkers):
        from .module_globals import read
        values = {name: read(g) for name, g in memory.globals.items()
                  if any(c.check.output == name for c in checkers)}
        for c in checkers:
            if c.check.output in values:
                parts[id(c)] = _compare_whole(c, values[c.check.output])
    by_name = {c.check.name: c for c in checkers}
    done = Outputs([on_device[check.name] if check.name in on_device
                    else by_name[check.name].result(parts[id(by_name[check.name])])
                    for check in spec.checks],
                   [str(b.save) for b in spec.buffers.values() if b.save])
    download = memory.staging.waits.copies - waited
    done.seconds = {"download": download, "check": time.perf_counter() - began - download}
    return done


def _device_checks(spec, memory) -> dict:
    """The checks the device runs (hostdata/device_check_source.py says which and
    why): their CheckResults by check name; the host makes nothing for them.
    Their inputs are read from device memory after the launch: one whose digest
    changed since the upload (the kernel wrote it, an in-place update) sends its
    checks to the host, which reads the inputs as they were made."""
    from . import device_data
    if not device_data.enabled():
        return {}
    eligible = device_data.checks_on_device(spec)
    pointers = {name: b.pointer for name, b in memory.buffers.items()}
    stream = memory.staging.stream
    unchanged = {name for name, before in memory.digests.items()
                 if device_data.digest(pointers[name], memory.buffers[name].spec.nbytes,
                                       stream) == before}
    done = {}
    for check in spec.checks:
        dc = eligible.get(check.name)
        if dc is None or not set(dc.inputs) <= unchanged:     # the kernel wrote an input
            continue
        result = device_data.run_check(dc, check, spec.buffers[check.output], pointers, stream)
        if result is not None:
            done[check.name] = result
    return done


def _reference_checks(spec, memory, checkers) -> dict:
    """Checks against a whole reference the host made (a matmul's), compared on the
    device with that array uploaded (kept for the next run while its reference is
    kept): their CheckResults by check name. The output then never comes back."""
    from . import device_data
    from ..hostdata.device_check_source import DeviceCheck, reference_check
    if not device_data.enabled():
        return {}
    pointers = {name: b.pointer for name, b in memory.buffers.items()}
    kept = memory.kept_reference or device_data.KeptReference()
    done = {}
    try:
        for c in checkers:
            output = spec.buffers.get(c.check.output)
            dc = reference_check(c) if output is not None else None
            if isinstance(dc, DeviceCheck):
                result = device_data.compare_with_reference(dc, c, output, pointers,
                                                            memory.staging.stream, kept)
                if result is not None:
                    done[c.check.name] = result
    finally:
        if kept is not memory.kept_reference:      # no session to keep it for
            kept.close()
    return done


def _download_whole(memory, buffer):
    """One output, whole (saved on the way, as _download does)."""
    import numpy as np
    whole = np.empty(buffer.shape, dtype=buffer.dtype.numpy_dtype())
    _download(memory, buffer, None, whole.reshape(-1))
    return whole


def _compare_whole(checker, array) -> list:
    """A check's parts from an output held whole: its region's elements, box by box."""
    import numpy as np
    from ..hostdata.threads import run_all
    region = checker.check.region
    flat = np.ascontiguousarray(array if region is None else array[tuple(region)]).reshape(-1)
    return run_all([lambda box=box: checker.compare(box, flat[box[0]:box[1]])
                    for box in checker.boxes])


def _download(memory, buffer, checker, into=None) -> list:
    """One output, slot by slot: the parts of its check, in box order; `into`: a
    flat array of the output's size to copy it to."""
    from ..hostdata.check import CHUNK, boxes
    from ..hostdata.threads import gather, submit
    from ..hostdata.values import NpyWriter
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
        if into is not None:
            into[start:stop] = view
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
