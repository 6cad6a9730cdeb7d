"""References made whole: `A @ B`, reductions, slices, region checks and
Python references (hostdata/check.py's module docstring says when and how).

What such a reference needs is counted from the shapes first and refused
beyond CUBINRUN_CHECK_MEMORY; a dry run checks its shape the same way
(`check_whole`). A reference made for one run is kept for the next
(refcache.py) when nothing it read changed.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import numpy as np

from ..dtypes import ElementType
from ..errors import SpecError
from ..specfile.model import BufferArg, Check
from .reference_arrays import Box, as_input, boxes, evaluate, must_broadcast, upcast
from .values import CHUNK


def is_whole(check: Check, inputs: Iterable[str]) -> bool:
    """Whether the reference is made whole (check.py's module docstring): a Python
    reference, or an expression using a whole-array operation or an index of an
    input (`x[2]`)."""
    if check.reference is not None or (check.region is not None and check.file is None):
        return True
    if check.expect is None:
        return False
    names = set(inputs)
    return check.expect.whole or any("[" in n and n.split("[")[0] in names
                                     for n in check.expect.names)


def reduces(check: Check) -> bool:
    """Whether the reference sums many terms (its default atol, module docstring)."""
    import ast
    if check.reference is not None:
        return True
    if check.expect is None:
        return False
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult)
               or isinstance(n, ast.Call) and getattr(n.func, "id", "") in _SUMS
               for n in ast.walk(check.expect.tree))


_SUMS = ("sum", "mean", "cumsum", "prod")


def check_whole(check: Check, output: BufferArg, buffers: Mapping[str, BufferArg],
                 scalars: Mapping[str, int | float], shape: tuple[int, ...], field: str) -> None:
    """A whole reference's shape and memory, from the shapes alone."""
    whole_output = output.nbytes if check.region is not None or output.section != "args" else 0
    if check.reference is not None:        # what it returns is known only once it ran
        need = sum(8 * b.numel for b in buffers.values()) + 8 * math.prod(shape) + whole_output
        within_memory(need, f"{check.reference.describe()}'s inputs and result",
                       f"{field}.reference")
        return
    expect = check.expect
    used = {n: b.shape for n, b in buffers.items() if n in roots(expect.names)}
    try:
        result, need = expect.plan(used, scalars)
    except SpecError as exc:
        raise exc.located(field=f"{field}.expect") from None
    within_memory(need + 8 * math.prod(shape) + whole_output,
                   f"{expect.source!r}", f"{field}.expect")
    must_broadcast(repr(expect.source), result, shape,
                    "region" if check.region else "output", f"{field}.expect")


def roots(names: Iterable[str]) -> set[str]:
    """`x` for `x` and `x[2]`."""
    return {n.split("[")[0] for n in names}


def within_memory(need: int, what: str, field: str) -> None:
    from .host_memory import check_memory_limit
    from ..text import human_bytes
    limit = check_memory_limit()
    if need > limit:
        raise SpecError(f"the reference {what} needs {human_bytes(need)} of host memory as "
                        f"whole arrays, more than the {human_bytes(limit)} a check may use "
                        f"(CUBINRUN_CHECK_MEMORY)", field=field)


class Made:
    """A whole reference as made (and kept by refcache): the array, or a Python
    reference's dict of them, with max |reference| of each output or region once
    worked out (a sweep's later points reuse it too)."""

    def __init__(self, value: Any):
        self.value = value
        self.scales: dict[tuple, float] = {}


class WholeReference:
    """A reference made whole (see the module docstring): evaluated once, or
    taken from the reference cache, and read one box at a time."""

    needs_boxes = True

    def __init__(self, check: Check, shape: tuple[int, ...], output_shape: tuple[int, ...],
                 inputs: Mapping[str, Any], scalars: Mapping[str, int | float],
                 input_types: Mapping[str, ElementType], field: str, scope: str | None):
        self.check, self.shape, self.field = check, shape, field
        self._inputs, self._scalars, self._types = inputs, scalars, input_types
        self._scope = scope
        if check.reference is not None:
            self._made = self._python(f"{field}.reference")
            array = self._pick(self._made.value, f"{field}.reference")
            source = check.reference.describe()
            field = f"{field}.reference"
        else:
            self._made = self._expect(f"{field}.expect")
            array = self._made.value
            source = repr(check.expect.source)
            field = f"{field}.expect"
        if check.region is not None and array.shape == output_shape != shape:
            array = array[tuple(check.region)]      # the whole output's reference: its region
        must_broadcast(source, array.shape, shape, "region" if check.region else "output",
                        field)
        if array.dtype.kind not in "biuf":
            raise SpecError(f"{source} gives {array.dtype} values, not numbers", field=field)
        self.array = np.broadcast_to(array, shape)
        self.dtype = array.dtype

    def scale(self) -> float:
        """max |reference| over its finite elements (0 when none), box by box on the
        worker threads, once per kept reference and region."""
        from .threads import run_all
        key = (self.check.output, repr(self.check.region))
        if key not in self._made.scales:
            parts = run_all([lambda box=box: finite_max_abs(self.array[box[2]])
                             for box in boxes(self.shape, CHUNK)])
            self._made.scales[key] = max(parts, default=0.0)
        return self._made.scales[key]

    def box(self, box: Box) -> np.ndarray:
        return np.ascontiguousarray(self.array[box[2]])

    def _whole_input(self, name: str) -> np.ndarray:
        source = as_input(self._inputs[name], self._types.get(name))
        return upcast(source.whole(), source.dtype)

    def _fingerprint(self, name: str):
        from .refcache import fingerprint
        if name in self._inputs:
            return fingerprint(self._inputs[name])
        return fingerprint(self._scalars.get(name))

    def _expect(self, field: str) -> Made:
        from .refcache import CACHE
        expect = self.check.expect
        used = sorted(roots(expect.names) & set(self._inputs))
        shapes = {n: tuple(self._inputs[n].shape) for n in used}
        try:
            _, need = expect.plan(shapes, self._scalars)
        except SpecError as exc:
            raise exc.located(field=field) from None
        within_memory(need, repr(expect.source), field)
        key = ("expect", self._scope, expect.source)
        reads = [(n, self._fingerprint(n)) for n in sorted(roots(expect.names))]
        if self._scope is not None and (kept := CACHE.get(key, reads=reads)) is not None:
            return kept
        env: dict[str, Any] = dict(self._scalars)
        env.update((n, self._whole_input(n)) for n in used)
        array = evaluate(expect, env, field)
        array.flags.writeable = False
        made = Made(array)
        if self._scope is not None:
            CACHE.put(key, reads, made, array.nbytes)
        return made

    def _python(self, field: str) -> Made:
        from .pyreference import RecordingInputs, RecordingVars, call
        from .refcache import CACHE
        reference = self.check.reference
        try:
            stat = reference.path.stat()
            version = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            version = None
        key = ("python", self._scope, str(reference.path), reference.function, version)
        made = None
        if self._scope is not None and version is not None:
            made = CACHE.get(key, current=self._fingerprint)
        if made is None:
            need = sum(8 * math.prod(v.shape) for v in self._inputs.values())
            within_memory(need + 8 * math.prod(self.shape),
                           f"{reference.describe()}'s inputs and result", field)
            inputs = RecordingInputs(list(self._inputs), self._whole_input)
            variables = RecordingVars(self._scalars)
            result = call(reference, inputs, variables, field)
            for array in (result.values() if isinstance(result, dict) else [result]):
                array.flags.writeable = False
            made = Made(result)
            if self._scope is not None and version is not None:
                reads = [(n, self._fingerprint(n)) for n in inputs.read + variables.read]
                nbytes = sum(a.nbytes for a in (result.values() if isinstance(result, dict)
                                                else [result]))
                CACHE.put(key, reads, made, nbytes)
        return made

    def _pick(self, result: Any, field: str) -> np.ndarray:
        """This check's array of a Python reference's result."""
        reference = self.check.reference
        if isinstance(result, dict):
            if self.check.output not in result:
                raise SpecError(f"{reference.describe()} returned a dict without "
                                f"{self.check.output!r} (it has: "
                                f"{', '.join(sorted(result)) or 'nothing'})", field=field)
            return result[self.check.output]
        return result


def finite_max_abs(values: np.ndarray) -> float:
    with np.errstate(invalid="ignore"):
        magnitudes = np.abs(np.asarray(values, dtype=np.float64))
    finite = magnitudes[np.isfinite(magnitudes)]
    return float(finite.max()) if finite.size else 0.0
