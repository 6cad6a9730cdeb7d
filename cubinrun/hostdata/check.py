"""Compare a kernel's output buffer with its reference (`check:` in the spec).

The reference
- `expect: EXPR` is evaluated with the buffers' input arrays upcast so the
  reference is more precise than any kernel: float dtypes become float64,
  booleans and integers int64, except u64 which stays uint64 (exact; its
  arithmetic wraps modulo 2**64 as on the GPU, and NumPy turns uint64 mixed
  with signed arrays into float64). `vars` and scalar args are plain numbers.
- `file: PATH.npy` must have the output's shape. A file in the output's host
  dtype (fp8e4b15: uint8 raw bytes; ml_dtypes' anonymous raw bytes too) holds
  elements of the output's type; any other numeric file holds plain values.
- It must broadcast to the output's shape (a scalar broadcasts).

References beyond elementwise (`A @ B`, reductions, slices, `reshape`, ...,
and `reference: FILE.py:FUNCTION`) are made whole: the inputs they read are
made whole and upcast as above, the reference is evaluated once (NumPy; a
float64 matmul goes to its multithreaded BLAS), and the output's boxes are
compared with the reference's boxes. What that needs (every array the
expression makes, counted from the shapes before anything is made) must fit
CUBINRUN_CHECK_MEMORY (host_memory.check_memory_limit), else the check is refused
(exit 2) with the size. Such references are kept for the next run of a sweep
(refcache.py) when nothing they read changed.

A check of a region (`"x[1:-1, 1:-1]"`) compares only that slice of the
output (downloaded whole for it); a check of a global compares the value read
back after the launch. Mismatches are reported at the output's own indices.

Integer references meet integer outputs modulo 2**bits: the reference is
wrapped into the output's type as a store would truncate it, so `x + y` in i32
matches a kernel whose i32 sum overflows. Boolean outputs expect reference != 0
(of any type). Float references are compared with integer outputs by value,
never cast.

Tolerances (an element passes when |out - ref| <= atol + rtol * |ref|, the
rule of numpy.isclose; defaults apply to whichever of rtol / atol is not given):

    dtype      rtol    atol     ulp: relative spacing of neighbours
    fp64       1e-10   1e-12    2**-53..2**-52: room for reordered float64 sums
    fp32       1e-5    1e-6     2**-24..2**-23: ~100 ulp for fp32 accumulation
    fp16       1e-3    1e-5     2**-11..2**-10: 1 to 2 ulp
    bf16       1e-2    1e-4     2**-8..2**-7: 1.3 to 2.5 ulp
    fp8e4nv    0.125   1e-2     2**-4..2**-3: 1 to 2 ulp
    fp8e4b15   0.125   1e-2     2**-4..2**-3: 1 to 2 ulp
    fp8e5      0.25    1e-2     2**-3..2**-2: 1 to 2 ulp
    integers   exact            (rtol / atol given: compared as above, in float64)

A reference that sums many terms (`@`, `sum`, `mean`, `cumsum`, `prod`, and
Python references, which are usually convolutions or stencils) is compared
with a default atol of max(the dtype's atol, rtol x max|reference|): the error
of a float32 dot product grows with the size of its terms, not with its
result, so an element that cancels to near 0 would fail any tolerance
relative to itself. (A 4096-term fp32 dot product of uniform(-1, 1) inputs
is off by ~1e-6 absolute where the result is ~1e-2; the float64 reference
itself is exact to ~1e-14.) A given atol is used as given.

`exact: true` compares bit patterns with the reference rounded to the output
dtype (round to nearest even; fp8e4b15 by hostdata.encode_fp8e4b15): -0.0 and
0.0 differ, and a reference the dtype cannot hold (fp8e4b15 NaN or overflow,
fp8e4nv overflow to NaN) never matches.
NaN never passes unless both sides are NaN and `nan_ok: true`; infinities pass
only when equal.

The comparison runs in blocks of about CHUNK elements on the worker threads,
the reference evaluated block by block from the inputs' blocks, so no
full-size float64 temporary exists (the expression's functions are all
elementwise, so a block's reference is exactly the whole reference's block). A
block is a run of flat indices that is also a box of the output (whole rows),
so inputs that broadcast are sliced, not expanded. Errors, counts and the first
mismatches (in flat order) are merged over the blocks in order: the result is
the whole-array comparison's, bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np

from ..dtypes import ElementType
from ..errors import SpecError
from .values import CHUNK as BLOCK
from .values import check_npy, convert_exactly, encode_fp8e4b15_masked, load_npy, to_float64
from ..specfile.model import BufferArg, Check
from .reference_arrays import (Box, as_input, box_origin, box_shape, boxes, evaluate,
                               must_broadcast, upcast)
from .whole_reference import WholeReference, check_whole, is_whole, reduces

CHUNK = BLOCK       # elements per compared block: the inputs' blocks, so none is drawn twice
MAX_REPORTED = 8

# (rtol, atol) when the spec gives none
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "fp64": (1e-10, 1e-12),
    "fp32": (1e-5, 1e-6),
    "fp16": (1e-3, 1e-5),
    "bf16": (1e-2, 1e-4),
    "fp8e4nv": (0.125, 1e-2),
    "fp8e4b15": (0.125, 1e-2),
    "fp8e5": (0.25, 1e-2),
}


class Mismatch(NamedTuple):
    index: tuple[int, ...]
    output: int | float
    expected: int | float


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    count: int                      # elements compared
    mismatches: int
    max_abs_err: float | None       # over pairs where both sides are finite; None: no such pair
    max_rel_err: float | None       # abs / |expected| over the same pairs; expected 0 counts 0
    first_mismatches: tuple[Mismatch, ...]
    rtol: float
    atol: float
    exact: bool                     # compared bit for bit (integers by default)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe: non-finite floats become the strings "nan", "inf", "-inf"."""
        return {
            "passed": self.passed,
            "max_abs_err": _json_number(self.max_abs_err),
            "max_rel_err": _json_number(self.max_rel_err),
            "mismatches": self.mismatches,
            "count": self.count,
            "rtol": self.rtol,
            "atol": self.atol,
            "exact": self.exact,
            "first_mismatches": [[list(m.index), _json_number(m.output), _json_number(m.expected)]
                                 for m in self.first_mismatches],
        }


def summarize(results: Iterable[CheckResult]) -> bool | None:
    """True when every check passed, False when one failed, None when there were none."""
    results = list(results)
    return all(r.passed for r in results) if results else None


def default_tolerances(dtype: ElementType) -> tuple[float, float]:
    return DEFAULT_TOLERANCES.get(dtype.name, (0.0, 0.0))


def compared_shape(check: Check, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape a check compares: its region's, or the whole output's `shape`."""
    if check.region is None:
        return tuple(shape)
    from ..specfile.expr import region_shape
    return region_shape(list(check.region), tuple(shape))


def check_reference(check: Check, output: BufferArg, buffers: Mapping[str, BufferArg],
                    scalars: Mapping[str, int | float]) -> None:
    """What `run_check` would refuse in the reference, found without data (a dry
    run): the expression evaluated on one-element stand-ins of the inputs (so
    `cdiv(x)` and `1/0` fail here), its shape worked out from the buffers'
    shapes (a whole-array expression: with the same rules as NumPy's, and the
    memory it needs), or a file's header read. `buffers` holds the globals too."""
    from ..specfile.expr import result_shape
    field = f"check.{check.name}"
    shape_checked = compared_shape(check, output.shape)
    if check.file is not None:
        check_npy(check.file, shape_checked, f"{field}.file", output.dtype, "the output")
        return
    if is_whole(check, buffers):
        check_whole(check, output, buffers, scalars, shape_checked, field)
        return
    env: dict[str, Any] = dict(scalars)
    for name in check.expect.names:
        if name in buffers:
            b = buffers[name]
            host = (np.float64 if b.dtype.kind == "float"
                    else np.uint64 if b.dtype.name == "u64" else np.int64)
            env[name] = np.ones((1,) * len(b.shape), dtype=host)
    evaluate(check.expect, env, f"{field}.expect")     # raises for cdiv(x), 1/0, bad names
    try:
        shape = result_shape(check.expect, {n: b.shape for n, b in buffers.items()})
    except ValueError as exc:                   # names the operands and their shapes
        raise SpecError(f"in {check.expect.source!r}, {exc}", field=f"{field}.expect") from None
    try:
        target = np.broadcast_shapes(shape, output.shape)
    except ValueError:
        target = None
    if target != output.shape:
        raise SpecError(f"{check.expect.source!r} has shape {list(shape)}, which does not "
                        f"broadcast to the output's {list(output.shape)}",
                        field=f"{field}.expect")


def run_check(check: Check, output: np.ndarray, dtype: ElementType,
              inputs: Mapping[str, Any], scalars: Mapping[str, int | float],
              input_types: Mapping[str, ElementType] | None = None) -> CheckResult:
    """Compare `output` (the buffer after the launch, host dtype of `dtype`) with
    the check's reference. `inputs` are the buffers' arrays before the launch
    (NumPy arrays or hostdata.InputValues); `input_types` the element types of
    plain arrays (needed to read fp8e4b15 inputs, whose host arrays are raw
    uint8; others are recognised by their NumPy dtype)."""
    from .threads import run_all
    checker = Checker(check, output.shape, dtype, inputs, scalars, input_types)
    if check.region is not None:
        output = output[tuple(check.region)]
    flat = np.ascontiguousarray(output).reshape(-1)
    return checker.result(run_all([lambda box=box: checker.compare(box, flat[box[0]:box[1]])
                                   for box in checker.boxes]))


class Checker:
    """One check, block by block: `boxes` cover the output in flat order;
    `compare(box, out)` (on any thread) compares the output's elements of one
    box (flat, `out`), and `result` merges the parts in box order."""

    def __init__(self, check: Check, shape: tuple[int, ...], dtype: ElementType,
                 inputs: Mapping[str, Any], scalars: Mapping[str, int | float],
                 input_types: Mapping[str, ElementType] | None = None,
                 scope: str | None = None):
        """`shape`: the whole output's (a region check compares part of it);
        `scope`: what a kept whole reference belongs to (the spec), None to keep none."""
        self.check, self.dtype = check, dtype
        self.output_shape = tuple(shape)
        self.shape = compared_shape(check, self.output_shape)
        field = f"check.{check.name}"
        scale = None
        if check.file is not None:
            self._reference: Any = _FileReference(check.file, self.shape, dtype, f"{field}.file")
        elif is_whole(check, inputs):
            self._reference = WholeReference(check, self.shape, self.output_shape, inputs,
                                              scalars, input_types or {}, field, scope)
            scale = self._reference.scale() if reduces(check) else None
        else:
            self._reference = _ExpectReference(check.expect, self.shape, inputs, scalars,
                                               input_types or {}, f"{field}.expect")
        self.comparison = _Comparison.make(check, dtype, self._reference.dtype, scale)
        if self._reference.needs_boxes:
            self.boxes = boxes(self.shape, CHUNK)
        else:                               # flat runs, each one block of every input
            n = math.prod(self.shape)
            self.boxes = [(a, min(n, a + CHUNK), None) for a in range(0, n, CHUNK)]

    def reference(self, box: Box) -> np.ndarray:
        """The box's reference, flat, as the comparison reads it (integers wrapped)."""
        start, stop, _ = box
        reference = self.comparison.prepare(self._reference.box(box))
        if reference.size == stop - start:
            return reference.reshape(-1)
        return np.broadcast_to(reference.reshape(-1)[:1], (stop - start,))  # a scalar: stride 0

    def compare(self, box: Box, out: np.ndarray) -> "_Part":
        return _Part.of(box[0], self.comparison.compare(out, self.reference(box)))

    def result(self, parts: Iterable["_Part"]) -> CheckResult:
        mismatches, max_abs, max_rel, first = 0, None, None, []
        for part in parts:
            mismatches += part.mismatches
            first.extend(part.first[:MAX_REPORTED - len(first)])
            if part.max_abs is not None:
                max_abs, max_rel = _max(max_abs, part.max_abs), _max(max_rel, part.max_rel)
        comparison = self.comparison
        return CheckResult(
            name=self.check.name, passed=mismatches == 0, count=math.prod(self.shape),
            mismatches=mismatches, max_abs_err=max_abs, max_rel_err=max_rel,
            first_mismatches=tuple(Mismatch(self.output_index(k), o, e) for k, o, e in first),
            rtol=comparison.rtol, atol=comparison.atol, exact=comparison.mode != "close")


    def output_index(self, flat: int) -> tuple[int, ...]:
        """The output's index of the compared element `flat` (a region's, mapped back)."""
        index = [int(i) for i in np.unravel_index(flat, self.shape)]
        if self.check.region is None:
            return tuple(index)
        out, at = [], iter(index)
        parts = list(self.check.region) + [slice(None)] * (len(self.output_shape)
                                                           - len(self.check.region))
        for part, n in zip(parts, self.output_shape):
            out.append(range(n)[part][next(at)] if isinstance(part, slice) else part % n)
        return tuple(out)


# ---------------------------------------------------------------- the reference

class _ExpectReference:
    """`expect: EXPR` over one box at a time: inputs of the output's size are read
    by flat range (their flat order is the output's: they differ at most by
    leading 1s), smaller ones broadcast (made whole once: they are smaller)."""

    def __init__(self, expect, shape: tuple[int, ...], inputs: Mapping[str, Any],
                 scalars: Mapping[str, int | float], input_types: Mapping[str, ElementType],
                 field: str):
        self.expect, self.shape, self.field = expect, shape, field
        self.scalars = dict(scalars)
        used = {name: as_input(inputs[name], input_types.get(name))
                for name in sorted(expect.names) if name in inputs}
        try:
            reference_shape = np.broadcast_shapes(*(s.shape for s in used.values()))
        except ValueError:
            shapes = " and ".join(str(list(s.shape)) for s in used.values())
            raise SpecError(f"cannot evaluate {expect.source!r}: its inputs' shapes {shapes} "
                            f"do not broadcast together", field=field) from None
        must_broadcast(repr(expect.source), reference_shape, shape, "output", field)
        n = math.prod(shape)
        self._by_range = {name: s for name, s in used.items() if s.count == n}
        self._broadcast = {name: np.broadcast_to(upcast(s.whole(), s.dtype), shape)
                           for name, s in used.items() if s.count != n}
        self.needs_boxes = bool(self._broadcast)
        first = (0, 1, (Ellipsis,) if not shape else (slice(0, 1),) * len(shape))
        sample = self.evaluate(self._env(first if self.needs_boxes else (0, 1, None))
                                if n else self._whole_env())
        self.dtype = sample.dtype

    def box(self, box: Box) -> np.ndarray:
        return self.evaluate(self._env(box))

    def _env(self, box: Box) -> dict[str, Any]:
        start, stop, index = box
        env: dict[str, Any] = dict(self.scalars)
        for name, source in self._by_range.items():
            block = upcast(source.values(start, stop), source.dtype)
            env[name] = block if index is None else block.reshape(box_shape(index, self.shape))
        for name, view in self._broadcast.items():
            env[name] = np.ascontiguousarray(view[index])   # contiguous: the whole's loops
        return env

    def _whole_env(self) -> dict[str, Any]:
        env: dict[str, Any] = dict(self.scalars)
        for name, source in self._by_range.items():
            env[name] = upcast(source.whole(), source.dtype)
        env.update(self._broadcast)
        return env

    def evaluate(self, env: dict[str, Any]) -> np.ndarray:
        return evaluate(self.expect, env, self.field)


class _FileReference:
    """`file: PATH.npy`, read (memory-mapped) one box at a time."""

    needs_boxes = True          # a box's corner names a bad element in the file

    def __init__(self, path, shape: tuple[int, ...], dtype: ElementType, field: str):
        self.name, self.shape, self.dtype_of_output, self.field = path.name, shape, dtype, field
        check_npy(path, shape, field, dtype, "the output")     # shape, numbers, not truncated
        self.values = load_npy(path, field, mmap=True)
        sample = self.values.reshape(-1)[:1] if self.values.size else self.values
        self.dtype = self._converted(np.asarray(sample), ()).dtype

    def box(self, box: Box) -> np.ndarray:
        index = box[2]
        return self._converted(np.ascontiguousarray(self.values[index]),
                               box_origin(index, self.shape))

    def _converted(self, values: np.ndarray, origin: tuple[int, ...]) -> np.ndarray:
        return _file_values(values, self.dtype_of_output, self.name, self.field, origin)


def _file_values(values: np.ndarray, dtype: ElementType, name: str, field: str,
                 origin: tuple[int, ...] = ()) -> np.ndarray:
    host = dtype.numpy_dtype()
    raw = values.dtype.kind == "V" and values.dtype.itemsize == host.itemsize
    if values.dtype == host or raw:
        try:
            elements = convert_exactly(values, dtype, origin)
        except ValueError as exc:
            raise SpecError(f"{name}: {exc}", field=field) from None
        return to_float64(elements, dtype) if dtype.kind == "float" else elements
    if values.dtype.kind not in "biuf":
        raise SpecError(f"{name} holds {values.dtype}, not numbers", field=field)
    return values


# ---------------------------------------------------------------- comparing

@dataclass(frozen=True)
class _Comparison:
    dtype: ElementType
    mode: str               # "bits": same bytes; "close": isclose in float64; "equal": ==
    wrap: bool              # the reference is stored into the output's integer type first
    rtol: float
    atol: float
    nan_ok: bool

    @classmethod
    def make(cls, check: Check, dtype: ElementType, reference: np.dtype,
             scale: float | None = None) -> "_Comparison":
        """`reference`: the dtype the reference evaluates to; `scale`: max |reference|
        of one that sums many terms (its default atol: the module docstring)."""
        if check.exact:
            rtol = atol = 0.0
        else:
            default_rtol, default_atol = default_tolerances(dtype)
            rtol = default_rtol if check.rtol is None else check.rtol
            atol = default_atol if check.atol is None else check.atol
            if check.atol is None and scale is not None and dtype.kind == "float":
                atol = max(atol, rtol * scale)
        wrap = dtype.kind == "bool" or (dtype.kind != "float" and reference.kind in "biu")
        integer_ref = wrap or reference.kind in "biu"
        if check.exact or (dtype.kind != "float" and rtol == 0.0 and atol == 0.0):
            mode = "bits" if dtype.kind == "float" or integer_ref else "equal"
        else:
            mode = "close"
        return cls(dtype, mode, wrap, rtol, atol, check.nan_ok)

    def prepare(self, reference: np.ndarray) -> np.ndarray:
        """"bits" on integers compares with the reference wrapped into the output's type."""
        return _wrap(reference, self.dtype) if self.wrap else reference

    def compare(self, out: np.ndarray, ref: np.ndarray) -> "_Block":
        out64 = to_float64(out, self.dtype)
        shown_out = out64 if self.dtype.kind == "float" else out
        with np.errstate(invalid="ignore", over="ignore"):
            if self.mode == "bits" and self.dtype.kind != "float":
                exp64 = ref.astype(np.float64)
                return _Block(out != ref, np.abs(out64 - exp64), exp64, shown_out, ref)
            ref64 = np.asarray(ref, dtype=np.float64)
            if self.mode == "bits":
                bad, exp64 = self._bits(out, out64, ref64)
                return _Block(bad, np.abs(out64 - exp64), exp64, shown_out, exp64)
            err = np.subtract(out64, ref64)
            np.abs(err, out=err)
            if self.mode == "equal":
                return _Block(~(out64 == ref64), err, ref64, shown_out, ref64)
            scale = np.abs(ref64)
            tolerance = scale * self.rtol
            tolerance += self.atol
            err_max = float(err.max(initial=0.0))
            if math.isfinite(err_max):                      # every pair finite: the usual case
                bad = err > tolerance
            else:
                ok = np.where(np.isfinite(err), err <= tolerance, out64 == ref64)  # inf == inf
                if self.nan_ok:
                    ok |= np.isnan(out64) & np.isnan(ref64)
                bad = ~ok
        return _Block(bad, err, ref64, shown_out, ref64, scale, err_max)

    def _bits(self, out: np.ndarray, out64: np.ndarray, ref64: np.ndarray):
        """Float outputs bit for bit against the reference rounded to their dtype."""
        if self.dtype.name == "fp8e4b15":
            expected, representable = encode_fp8e4b15_masked(ref64)
        else:
            expected = ref64.astype(self.dtype.numpy_dtype())
            representable = np.ones(ref64.shape, dtype=bool)
        expected64 = to_float64(expected, self.dtype)
        ref_nan = np.isnan(ref64)
        representable &= ~(np.isnan(expected64) & ~ref_nan)    # overflow into NaN
        unsigned = f"u{out.dtype.itemsize}"
        same = (out.view(unsigned) == expected.view(unsigned)) & representable
        out_nan = np.isnan(out64)
        ok = same & ~out_nan & ~ref_nan
        if self.nan_ok:
            ok |= out_nan & ref_nan
        return ~ok, np.where(representable, expected64, ref64)


def _wrap(reference: np.ndarray, dtype: ElementType) -> np.ndarray:
    """A reference stored into an integer dtype: modulo 2**bits; booleans as != 0."""
    host = dtype.numpy_dtype()
    if dtype.kind == "bool":
        return (reference != 0).astype(host)
    return reference.astype(host)


class _Block(NamedTuple):
    """One block compared: what failed, |out - expected|, and what to report."""
    bad: np.ndarray
    err: np.ndarray                     # NaN or inf where a side is not finite
    expected64: np.ndarray
    shown_out: np.ndarray
    shown_expected: np.ndarray
    scale: np.ndarray | None = None     # |expected64|, when already computed
    err_max: float | None = None        # err.max(initial=0.0), when already computed


class _Part(NamedTuple):
    """What one block contributes: counts, extremes and its first mismatches
    (flat index, output, expected) in flat order."""
    mismatches: int
    max_abs: float | None
    max_rel: float | None
    first: list

    @classmethod
    def of(cls, start: int, block: _Block) -> "_Part":
        mismatches = int(np.count_nonzero(block.bad))
        first = [(start + int(i), block.shown_out[i].item(), block.shown_expected[i].item())
                 for i in np.flatnonzero(block.bad)[:MAX_REPORTED]] if mismatches else []
        err, expected, scale = block.err, block.expected64, block.scale
        err_max = float(err.max(initial=0.0)) if block.err_max is None else block.err_max
        if not math.isfinite(err_max):                      # drop pairs with a non-finite side
            finite = np.isfinite(err)
            err, expected = err[finite], expected[finite]
            scale = None if scale is None else scale[finite]
            err_max = float(err.max(initial=0.0))
        if err.size == 0:
            return cls(mismatches, None, None, first)
        if scale is None:
            scale = np.abs(expected)
        with np.errstate(invalid="ignore"):
            rel = np.divide(err, scale, out=np.zeros_like(err), where=scale != 0)
        return cls(mismatches, err_max, float(rel.max()), first)


def _max(a: float | None, b: float) -> float:
    return b if a is None else max(a, b)


def _json_number(x: int | float | None) -> int | float | str | None:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


@dataclass(frozen=True)
class Expected:
    """What `run_check` compares an output with, for a comparison made elsewhere
    (the reproducer's C). Mode "bits": the elements are the output's dtype (the
    reference rounded or wrapped into it) to compare byte for byte; "close":
    float64 values to meet within atol + rtol * |expected| ("equal" is close
    with no tolerance). `blocks()` gives them in flat order, one box at a time,
    so an output of any size is written without a whole copy."""
    mode: str
    rtol: float
    atol: float
    nan_ok: bool
    checker: Checker

    def block(self, box: Box) -> np.ndarray:
        """One box's expected elements, flat and contiguous (any thread)."""
        checker, dtype = self.checker, self.checker.dtype
        flat = checker.reference(box)
        if self.mode == "bits" and dtype.kind != "float":
            return np.ascontiguousarray(flat)              # wrapped into the output's type
        ref64 = np.asarray(flat, dtype=np.float64)
        if self.mode == "bits":
            if dtype.name == "fp8e4b15":
                return encode_fp8e4b15_masked(ref64)[0]
            return ref64.astype(dtype.numpy_dtype())
        return np.ascontiguousarray(ref64)

    def blocks(self) -> Iterable[np.ndarray]:
        from .threads import ordered
        return ordered(lambda box=box: self.block(box) for box in self.checker.boxes)


def expected_for(check: Check, shape: tuple[int, ...], dtype: ElementType,
                 inputs: Mapping[str, Any], scalars: Mapping[str, int | float],
                 input_types: Mapping[str, ElementType] | None = None) -> Expected:
    """The expected output of `check` (see `Expected`); `inputs` as for `run_check`."""
    checker = Checker(check, shape, dtype, inputs, scalars, input_types)
    c = checker.comparison
    if c.mode == "bits":
        return Expected("bits", 0.0, 0.0, c.nan_ok, checker)
    return Expected("close", c.rtol, c.atol, c.nan_ok and c.mode == "close", checker)
