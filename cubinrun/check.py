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

`exact: true` compares bit patterns with the reference rounded to the output
dtype (round to nearest even; fp8e4b15 by hostdata.encode_fp8e4b15): -0.0 and
0.0 differ, and a reference the dtype cannot hold (fp8e4b15 NaN or overflow,
fp8e4nv overflow to NaN) never matches.
NaN never passes unless both sides are NaN and `nan_ok: true`; infinities pass
only when equal.

The comparison runs in blocks of CHUNK elements, so a 1-GiB output needs no
full-size float64 temporaries (beyond the reference itself).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

import numpy as np

from .dtypes import ElementType
from .errors import SpecError
from .hostdata import (check_npy, convert_exactly, encode_fp8e4b15_masked, load_npy,
                       to_float64)
from .spec.model import BufferArg, Check

CHUNK = 1 << 22
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


def check_reference(check: Check, output: BufferArg, buffers: Mapping[str, BufferArg],
                    scalars: Mapping[str, int | float]) -> None:
    """What `run_check` would refuse in the reference, found without data (a dry
    run): the expression evaluated on one-element stand-ins of the inputs (so
    `cdiv(x)` and `1/0` fail here), its shape worked out from the buffers'
    shapes, or a file's header read."""
    from .expr import result_shape
    field = f"check.{check.output}"
    if check.file is not None:
        check_npy(check.file, output.shape, f"{field}.file", output.dtype, "the output")
        return
    env: dict[str, Any] = dict(scalars)
    for name in check.expect.names:
        if name in buffers:
            b = buffers[name]
            host = (np.float64 if b.dtype.kind == "float"
                    else np.uint64 if b.dtype.name == "u64" else np.int64)
            env[name] = np.ones((1,) * len(b.shape), dtype=host)
    _evaluate(check, env, field)                # raises for cdiv(x), 1/0, bad names
    try:
        shape = result_shape(check.expect, {n: b.shape for n, b in buffers.items()})
        target = np.broadcast_shapes(shape, output.shape)
    except ValueError:
        shape, target = None, None
    if target != output.shape:
        shown = "operands that do not broadcast" if shape is None else f"shape {list(shape)}"
        raise SpecError(f"{check.expect.source!r} has {shown}, which does not broadcast to "
                        f"the output's {list(output.shape)}", field=f"{field}.expect")


def run_check(check: Check, output: np.ndarray, dtype: ElementType,
              inputs: Mapping[str, np.ndarray], scalars: Mapping[str, int | float],
              input_types: Mapping[str, ElementType] | None = None) -> CheckResult:
    """Compare `output` (the buffer after the launch, host dtype of `dtype`) with
    the check's reference. `inputs` are the buffers' arrays before the launch;
    `input_types` their element types (needed to read fp8e4b15 inputs, whose
    host arrays are raw uint8; others are recognised by their NumPy dtype)."""
    field = f"check.{check.output}"
    reference = _reference(check, output, dtype, inputs, scalars, input_types or {}, field)
    comparison = _Comparison.make(check, dtype, reference)
    shape = output.shape
    out_flat = np.ascontiguousarray(output).reshape(-1)
    ref_flat = _flat_broadcast(comparison.reference, shape)
    tally = _Tally()
    for start in range(0, out_flat.size, CHUNK):
        stop = min(out_flat.size, start + CHUNK)
        tally.add(start, comparison.compare(out_flat[start:stop], ref_flat[start:stop]))
    return CheckResult(
        name=check.output, passed=tally.mismatches == 0, count=int(out_flat.size),
        mismatches=tally.mismatches, max_abs_err=tally.max_abs, max_rel_err=tally.max_rel,
        first_mismatches=tuple(Mismatch(tuple(int(i) for i in np.unravel_index(k, shape)), o, e)
                               for k, o, e in tally.first),
        rtol=comparison.rtol, atol=comparison.atol, exact=comparison.mode != "close")


# ---------------------------------------------------------------- the reference

def _reference(check: Check, output: np.ndarray, dtype: ElementType,
               inputs: Mapping[str, np.ndarray], scalars: Mapping[str, int | float],
               input_types: Mapping[str, ElementType], field: str) -> np.ndarray:
    if check.file is not None:
        check_npy(check.file, output.shape, f"{field}.file", dtype, "the output")
        values = load_npy(check.file, f"{field}.file")
        if values.shape != output.shape:
            raise SpecError(f"{check.file.name} has shape {list(values.shape)}, the output "
                            f"is {list(output.shape)}", field=f"{field}.file")
        return _file_values(values, dtype, check.file.name, f"{field}.file")
    env: dict[str, Any] = dict(scalars)
    for name in check.expect.names:
        if name in inputs:
            env[name] = _upcast(inputs[name], input_types.get(name))
    reference = _evaluate(check, env, field)
    try:
        target = np.broadcast_shapes(reference.shape, output.shape)
    except ValueError:
        target = None
    if target != output.shape:
        raise SpecError(f"{check.expect.source!r} has shape {list(reference.shape)}, which does "
                        f"not broadcast to the output's {list(output.shape)}",
                        field=f"{field}.expect")
    return reference


def _evaluate(check: Check, env: Mapping[str, Any], field: str) -> np.ndarray:
    try:
        reference = np.asarray(check.expect.evaluate(env))
    except SpecError as exc:
        raise exc.located(field=f"{field}.expect") from None
    if reference.dtype.kind not in "biuf":
        raise SpecError(f"{check.expect.source!r} gives {reference.dtype} values, not numbers",
                        field=f"{field}.expect")
    return reference


def _file_values(values: np.ndarray, dtype: ElementType, name: str, field: str) -> np.ndarray:
    host = dtype.numpy_dtype()
    raw = values.dtype.kind == "V" and values.dtype.itemsize == host.itemsize
    if values.dtype == host or raw:
        try:
            elements = convert_exactly(values, dtype)
        except ValueError as exc:
            raise SpecError(f"{name}: {exc}", field=field) from None
        return to_float64(elements, dtype) if dtype.kind == "float" else elements
    if values.dtype.kind not in "biuf":
        raise SpecError(f"{name} holds {values.dtype}, not numbers", field=field)
    return values


def _upcast(array: np.ndarray, dtype: ElementType | None) -> np.ndarray:
    """An input as the reference reads it: float64, int64, or uint64 for u64."""
    if dtype is not None and dtype.kind == "float":
        return to_float64(array, dtype)
    kind = array.dtype.kind
    if kind == "u" and array.dtype.itemsize == 8:
        return array
    if kind in "biu":
        return array.astype(np.int64)
    return array.astype(np.float64)          # float and ml_dtypes arrays


def _flat_broadcast(reference: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    n = math.prod(shape)
    if reference.shape == shape:
        return np.ascontiguousarray(reference).reshape(-1)
    if reference.size == 1:                  # a stride-0 view: no copy
        return np.broadcast_to(reference.reshape(1), (n,))
    return np.ascontiguousarray(np.broadcast_to(reference, shape)).reshape(-1)


# ---------------------------------------------------------------- comparing

@dataclass(frozen=True)
class _Comparison:
    dtype: ElementType
    mode: str               # "bits": same bytes; "close": isclose in float64; "equal": ==
    reference: np.ndarray   # "bits" on integers: already wrapped into the output's type
    rtol: float
    atol: float
    nan_ok: bool

    @classmethod
    def make(cls, check: Check, dtype: ElementType, reference: np.ndarray) -> "_Comparison":
        if check.exact:
            rtol = atol = 0.0
        else:
            default_rtol, default_atol = default_tolerances(dtype)
            rtol = default_rtol if check.rtol is None else check.rtol
            atol = default_atol if check.atol is None else check.atol
        if dtype.kind == "bool" or (dtype.kind != "float" and reference.dtype.kind in "biu"):
            reference = _wrap(reference, dtype)
        integer_ref = reference.dtype.kind in "biu"
        if check.exact or (dtype.kind != "float" and rtol == 0.0 and atol == 0.0):
            mode = "bits" if dtype.kind == "float" or integer_ref else "equal"
        else:
            mode = "close"
        return cls(dtype, mode, reference, rtol, atol, check.nan_ok)

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
            err = np.abs(out64 - ref64)
            if self.mode == "equal":
                return _Block(~(out64 == ref64), err, ref64, shown_out, ref64)
            scale = np.abs(ref64)
            tolerance = scale * self.rtol
            tolerance += self.atol
            if math.isfinite(err.max(initial=0.0)):        # every pair finite: the usual case
                bad = err > tolerance
            else:
                ok = np.where(np.isfinite(err), err <= tolerance, out64 == ref64)  # inf == inf
                if self.nan_ok:
                    ok |= np.isnan(out64) & np.isnan(ref64)
                bad = ~ok
        return _Block(bad, err, ref64, shown_out, ref64, scale)

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


class _Tally:
    """Counts and extremes over the blocks; the first mismatches in flat order."""

    def __init__(self) -> None:
        self.mismatches = 0
        self.max_abs: float | None = None
        self.max_rel: float | None = None
        self.first: list[tuple[int, int | float, int | float]] = []

    def add(self, start: int, block: _Block) -> None:
        self.mismatches += int(np.count_nonzero(block.bad))
        if len(self.first) < MAX_REPORTED and self.mismatches:
            for i in np.flatnonzero(block.bad)[:MAX_REPORTED - len(self.first)]:
                self.first.append((start + int(i), block.shown_out[i].item(),
                                   block.shown_expected[i].item()))
        err, expected, scale = block.err, block.expected64, block.scale
        if not math.isfinite(err.max(initial=0.0)):        # drop pairs with a non-finite side
            finite = np.isfinite(err)
            err, expected = err[finite], expected[finite]
            scale = None if scale is None else scale[finite]
        if err.size == 0:
            return
        if scale is None:
            scale = np.abs(expected)
        with np.errstate(invalid="ignore"):
            rel = np.divide(err, scale, out=np.zeros_like(err), where=scale != 0)
        self.max_abs = _max(self.max_abs, float(err.max()))
        self.max_rel = _max(self.max_rel, float(rel.max()))


def _max(a: float | None, b: float) -> float:
    return b if a is None else max(a, b)


def _json_number(x: int | float | None) -> int | float | str | None:
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def expected_for(check: Check, shape: tuple[int, ...], dtype: ElementType,
                 inputs: Mapping[str, np.ndarray], scalars: Mapping[str, int | float],
                 input_types: Mapping[str, ElementType] | None = None):
    """What `run_check` compares an output of `shape` with, for a comparison made
    elsewhere (the reproducer's C): (mode, expected, rtol, atol, nan_ok). Mode
    "bits": `expected` holds elements of the output's dtype (the reference
    rounded or wrapped into it) to compare byte for byte; "close": float64
    values to meet within atol + rtol * |expected| ("equal" is close with no
    tolerance)."""
    field = f"check.{check.output}"
    shaped = np.broadcast_to(np.zeros((), dtype.numpy_dtype()), shape)   # no allocation
    reference = _reference(check, shaped, dtype, inputs, scalars, input_types or {}, field)
    comparison = _Comparison.make(check, dtype, reference)
    flat = _flat_broadcast(comparison.reference, shape)
    if comparison.mode == "bits" and dtype.kind != "float":
        return "bits", np.ascontiguousarray(flat), 0.0, 0.0, comparison.nan_ok
    ref64 = np.asarray(flat, dtype=np.float64)
    if comparison.mode == "bits":
        if dtype.name == "fp8e4b15":
            expected = encode_fp8e4b15_masked(ref64)[0]
        else:
            expected = ref64.astype(dtype.numpy_dtype())
        return "bits", np.ascontiguousarray(expected), 0.0, 0.0, comparison.nan_ok
    return ("close", np.ascontiguousarray(ref64), comparison.rtol, comparison.atol,
            comparison.nan_ok and comparison.mode == "close")
