"""The dry run's data checks, without NumPy where it can prove them passed.

Every run refuses, before any binary or GPU, what its data cannot do: a buffer's init
that does not fit its dtype, and a check reference that cannot be evaluated
or does not broadcast to its output. Those checks make one-element arrays
with NumPy, whose import alone is a quarter of a dry run's time. Most specs
use inits and references whose checks cannot fail: zeros, ones, random
bounds inside an fp16/fp32/fp64 or integer range, a fill that fits, an
expression of + - * over float buffers. For those this module proves the
outcome in plain Python; for anything else (a file, bf16 and fp8, division,
functions, integer buffers, a value near a limit) it makes them with NumPy,
which reports the error exactly as before. A proof only ever says "passes"
where NumPy's check passes (tests/hostdata/test_dry_checks.py checks that against
NumPy), so nothing is weaker: the slow path is just taken less often.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import sys

from ..errors import SpecError
from ..specfile.array_ops import broadcast_shapes
from ..specfile.model import DEFAULT_UNIFORM, NORMAL_SIGMAS, BufferArg, Check, Init, Spec
from ..specfile.scalars import check_scalar_value

# The largest finite value of the float dtypes NumPy itself has (np.finfo().max).
FLOAT_MAX = {"fp16": 65504.0, "fp32": 3.4028234663852886e38, "fp64": sys.float_info.max}
_INT64 = (-2**63, 2**63 - 1)


def check_data(spec: Spec) -> None:
    """The host data and check references the spec describes, checked without
    making them (NumPy's check skipped when every part is proven to pass)."""
    if not spec.globals and all(init_passes(b) for b in spec.buffers.values()) and all(
            reference_passes(c, spec) for c in spec.checks):
        return
    check_with_numpy(spec)


def check_with_numpy(spec: Spec) -> None:
    """Each buffer's init and each check reference tried on one-element arrays."""
    from .check import check_reference
    from .values import check_init
    for buffer in (*spec.buffers.values(), *spec.globals.values()):
        check_init(buffer)
    env = spec.expression_env()
    outputs = {**spec.buffers, **spec.globals}
    for check in spec.checks:
        check_reference(check, outputs[check.output], outputs, env)


def _range(dtype) -> tuple[float, float] | None:
    """hostdata.finite_range for the dtypes known here; None for the others."""
    if dtype.kind != "float":
        lo, hi = dtype.int_range()
        return float(lo), float(hi)
    if dtype.name in FLOAT_MAX:
        return -FLOAT_MAX[dtype.name], FLOAT_MAX[dtype.name]
    return None


def init_passes(buffer: BufferArg) -> bool:
    """Whether hostdata.check_init(buffer) is sure to pass."""
    init, dtype = buffer.init, buffer.dtype
    if init.kind == "zeros":
        return True
    if init.kind in ("ones", "fill"):
        return _fits(dtype, 1 if init.kind == "ones" else init.value)
    bounds = _range(dtype)
    if bounds is None:
        return False
    if init.kind == "arange":
        n = buffer.numel
        return dtype.kind != "float" or n == 0 or n - 1 <= bounds[1]
    if init.kind == "random":
        return (init.seed is None or 0 <= init.seed < 2**64) and _random_fits(init, dtype, bounds)
    return False                                        # a file: its header needs reading


def _fits(dtype, value) -> bool:
    if dtype.kind != "float":
        try:
            check_scalar_value(dtype, value)
        except SpecError:
            return False
        return True
    if dtype.name not in FLOAT_MAX or isinstance(value, bool) or \
            not isinstance(value, (int, float)):
        return False
    try:
        x = float(value)
    except OverflowError:
        return False
    return not math.isfinite(x) or abs(x) <= FLOAT_MAX[dtype.name]    # NaN, inf: they have both


def _random_fits(init: Init, dtype, bounds: tuple[float, float]) -> bool:
    lo, hi = bounds
    if init.distribution == "normal":
        return (math.isfinite(init.mean) and math.isfinite(init.std) and init.std >= 0
                and lo <= init.mean - NORMAL_SIGMAS * init.std
                and init.mean + NORMAL_SIGMAS * init.std <= hi)
    if init.distribution != "uniform":
        return False
    default_lo, default_hi = DEFAULT_UNIFORM[dtype.kind]
    low = default_lo if init.low is None else init.low
    high = default_hi if init.high is None else init.high
    if not (math.isfinite(low) and math.isfinite(high)):
        return False
    if dtype.kind != "float":
        first, stop = math.ceil(low), math.ceil(high)
        return first < stop and lo <= first and stop - 1 <= hi
    return low < high and lo <= low and high <= hi and math.isfinite(high - low)


# --- check references --------------------------------------------------------

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.USub, ast.UAdd)


def reference_passes(check: Check, spec: Spec) -> bool:
    """Whether check.check_reference is sure to pass: an expression of + - *
    over float buffers, scalars and numbers, whose value has a NumPy number
    type and whose shape broadcasts to the output's."""
    if check.expect is None or check.region is not None or check.expect.whole \
            or not _plain_arithmetic(check.expect.tree.body):
        return False
    buffers = spec.buffers
    used = [buffers[name] for name in check.expect.names if name in buffers]
    if any(b.dtype.kind != "float" for b in used):
        return False            # NumPy's integer rules (NEP 50) differ from Python's
    env = {**spec.expression_env(), **{b.name: 1.0 for b in used}}
    try:
        value = dataclasses.replace(check.expect, arrays=False).evaluate(env)
        output = buffers[check.output].shape
        shape = broadcast_shapes(*(b.shape for b in used))
        if broadcast_shapes(shape, output) != output:
            return False
    except (SpecError, ValueError, KeyError):
        return False
    return isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)
                                        and _INT64[0] <= value <= _INT64[1])


def _plain_arithmetic(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _OPERATORS) and _plain_arithmetic(node.left) and \
            _plain_arithmetic(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, _OPERATORS) and _plain_arithmetic(node.operand)
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and _plain_arithmetic(node.value)
    return isinstance(node, ast.Name)
