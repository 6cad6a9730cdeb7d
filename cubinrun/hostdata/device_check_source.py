"""Checks on the GPU: an elementwise `expect:` turned into a CUDA C++ kernel that
applies check.py's rule (rtol / atol / exact, NaN handling included) and reduces
to what a CheckResult reports (the count, the largest errors, the first
mismatches), so only a few bytes come back.

`device_check(...)` decides, without a GPU, whether a check can run there: a
`DeviceCheck` (its source, its inputs and scalar arguments) or a `HostOnly`
with the reason. The device path takes what it can evaluate exactly as NumPy
does on the host (float64 for floats, int64 for integers, NumPy 2's rules for
Python numbers): `+ - * /`, unary minus, single comparisons, `abs sqrt min max
minimum maximum where`, over buffers of the output's shape or that broadcast
to it (read through their strides) and scalars (vars and scalar args; a part
made of scalars only is worked out on the host, in Python, and passed in). The host keeps: `file:` and Python references, whole-array
expressions, region checks, checks of a global or reading one, `// % **`, `and or not`, chained comparisons, the transcendental
functions (the device's exp, log, sin, ... round differently from NumPy's),
u64 and fp8 buffers, and integers beyond int64.
"""
from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..dtypes import ElementType
from ..specfile.expr import parse_expr
from ..specfile.model import BufferArg, Check
from .device_draws import COMMON, TYPE_CODES, HostOnly

TEMPLATE = Path(__file__).with_name("device_check.cu")
STATS_WORDS = 5             # mismatches, max |err| bits, max rel bits, finite pairs, first index
SHOW_WORDS = 4              # per shown element: out64, out's integer, ref64, the wrapped ref

_DEVICE_TYPES = ("fp64", "fp32", "fp16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16",
                 "u32", "i1", "u1")
_OUTPUT_TYPES = _DEVICE_TYPES + ("u64",)
_LOAD = {"fp64": "LOAD_F64", "fp32": "LOAD_F32", "fp16": "LOAD_F16", "bf16": "LOAD_BF16",
         "i8": "LOAD_I8", "i16": "LOAD_I16", "i32": "LOAD_I32", "i64": "LOAD_I64",
         "u8": "LOAD_U8", "u16": "LOAD_U16", "u32": "LOAD_U32", "u64": "LOAD_U64",
         "i1": "LOAD_U8", "u1": "LOAD_U8"}
_C_TYPE = {"fp64": "double", "fp32": "float", "fp16": "u16", "bf16": "u16", "i8": "signed char",
           "i16": "short", "i32": "int", "i64": "i64", "u8": "u8", "u16": "u16", "u32": "u32",
           "u64": "u64", "i1": "u8", "u1": "u8"}
_INT64 = (-(1 << 63), (1 << 63) - 1)
_STORED = {"i1": "i8", "u1": "u8"}        # booleans' host arrays: their elements as read


@dataclass(frozen=True)
class DeviceCheck:
    """A check the device runs: `source` (the kernels cr_check and cr_check_show),
    `inputs` the buffers it reads in order (after the output), `scalars` the
    values of its scalar parameters (floats as double, ints as i64), `mode`,
    `wrap`, `rtol`, `atol`, `nan_ok` as check.py's comparison has them."""
    source: str
    inputs: tuple[str, ...]
    scalars: tuple[tuple[str, Any], ...]    # ("d" | "i", a number) or ("s", 8 dims/strides)
    reference_kind: str                               # "f", "i" or "b"
    mode: str
    wrap: bool
    rtol: float
    atol: float
    nan_ok: bool


class _NotHere(Exception):
    """Why the expression stays on the host."""


def device_check(check: Check, output: BufferArg | None, buffers: Mapping[str, BufferArg],
                 scalars: Mapping[str, Any], globals_read: frozenset[str] = frozenset()
                 ) -> DeviceCheck | HostOnly:
    """How `check` runs on the device, or why it does not (see the module
    docstring). `output` is None for a check of a module global; `buffers` the
    spec's buffers by name; `globals_read` the names of module globals."""
    if output is None:
        return HostOnly("a check of a module global compares the value read back")
    if check.file is not None:
        return HostOnly("a file: reference is read on the host")
    if check.expect is None:
        return HostOnly("a Python reference runs on the host")
    if check.region is not None:
        return HostOnly("a region check compares a slice of the output")
    if check.expect.whole:
        return HostOnly("a whole-array reference (matmul, reduction, slice, ...) is made by NumPy")
    if output.dtype.name not in _OUTPUT_TYPES:
        return HostOnly(f"{output.dtype.name} outputs are compared on the host")
    try:
        gen = _Codegen(check, output, buffers, scalars, globals_read)
        code, kind = gen.emit(check.expect.tree.body)       # the tree the host evaluates
    except _NotHere as why:
        return HostOnly(str(why))
    kind = {"I": "i", "F": "f"}.get(kind, kind)     # a Python number alone: int64 / float64
    from .check import _Comparison
    import numpy as np
    reference = {"f": np.dtype(np.float64), "i": np.dtype(np.int64), "b": np.dtype(bool)}[kind]
    c = _Comparison.make(check, output.dtype, reference, None)
    source = _source(code, kind, output.dtype,
                     [buffers[name].dtype.name for name in gen.inputs], [t for t, _ in gen.params])
    return DeviceCheck(source, tuple(gen.inputs), tuple(gen.params), kind, c.mode, c.wrap,
                       c.rtol, c.atol, c.nan_ok)


def reference_check(checker) -> DeviceCheck | HostOnly:
    """A check whose reference the host made whole (a matmul's, a reduction's, a
    Python reference's: check.Checker with a WholeReference) compared on the
    device against that very array, uploaded: the rule and the reference are the
    host's, only the comparison moves. The array must be the output's shape
    (no region, no broadcast), C-contiguous float64, int64 or bool."""
    from .whole_reference import WholeReference
    reference = getattr(checker, "_reference", None)
    if not isinstance(reference, WholeReference):
        return HostOnly("not a whole-array reference")
    if checker.check.region is not None or checker.shape != checker.output_shape:
        return HostOnly("a region check compares a slice of the output")
    if checker.dtype.name not in _OUTPUT_TYPES:
        return HostOnly(f"{checker.dtype.name} outputs are compared on the host")
    array = reference.array
    kind = {"f": "f", "i": "i", "b": "b"}.get(array.dtype.kind)
    if (kind is None or array.dtype.itemsize != (1 if kind == "b" else 8)
            or not array.flags.c_contiguous or array.shape != checker.shape):
        return HostOnly("the reference broadcasts, or is not float64, int64 or bool")
    load = {"f": "LOAD_F64", "i": "LOAD_I64", "b": "LOAD_U8"}[kind]
    code = f"{load}(in0, i)" if kind != "b" else f"({load}(in0, i) != 0)"
    stored = {"f": "fp64", "i": "i64", "b": "u8"}[kind]
    c = checker.comparison
    return DeviceCheck(_source(code, kind, checker.dtype, [stored], []), ("reference",), (),
                       kind, c.mode, c.wrap, c.rtol, c.atol, c.nan_ok)


class _Codegen:
    def __init__(self, check: Check, output: BufferArg, buffers, scalars, globals_read):
        self.check, self.output, self.buffers = check, output, buffers
        self.scalars, self.globals_read = scalars, globals_read
        self.inputs: list[str] = []
        self.params: list[tuple[str, Any]] = []      # ("d" | "i", number) or ("s", 8 ints)
        self.strides: dict[str, str] = {}           # a broadcast input's strides: its param
        self.dims: str | None = None

    # -- (C++ code, kind): kind "f" float64, "i" int64, "b" bool; "F" / "I" a Python
    #    float / int (NumPy's weak scalars: they take the array's type)
    def emit(self, n: ast.AST) -> tuple[str, str]:
        if self._scalar_only(n):
            return self._folded(n)
        if isinstance(n, ast.Name):
            return self._buffer(n.id)
        if isinstance(n, ast.BinOp):
            return self._binary(n)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            code, kind = self.emit(n.operand)
            if kind == "b":
                raise _NotHere("arithmetic on booleans follows NumPy's bool rules")
            if isinstance(n.op, ast.UAdd):
                return code, kind
            return (f"(-{code})", "f") if kind == "f" else (f"((i64)(0ull - (u64)({code})))", "i")
        if isinstance(n, ast.Compare):
            if len(n.ops) != 1 or isinstance(n.ops[0], (ast.In, ast.NotIn, ast.Is, ast.IsNot)):
                raise _NotHere("a chained comparison is evaluated on the host")
            left, right = self.emit(n.left), self.emit(n.comparators[0])
            kind = _promote(left[1], right[1], "a comparison")
            op = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                  ast.NotEq: "!="}[type(n.ops[0])]
            return f"({_as(left, kind)} {op} {_as(right, kind)})", "b"
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
            return self._call(n.func.id, n.args)
        raise _NotHere(f"{ast.unparse(n)!r} is evaluated on the host")

    def _scalar_only(self, n: ast.AST) -> bool:
        names = {x.id for x in ast.walk(n) if isinstance(x, ast.Name)}
        calls = {x.func.id for x in ast.walk(n) if isinstance(x, ast.Call)
                 and isinstance(x.func, ast.Name)}
        if any(isinstance(x, ast.Subscript) for x in ast.walk(n)):
            return False                        # t[0] names: the host's evaluator knows them
        return not (names - calls) & (set(self.buffers) | self.globals_read)

    def _folded(self, n: ast.AST) -> tuple[str, str]:
        """A part over scalars only, worked out now in Python (the host's own rules)."""
        try:
            value = parse_expr(ast.unparse(n), arrays=True).evaluate(dict(self.scalars))
        except Exception:                       # the host's evaluator says what is wrong
            raise _NotHere("the host's evaluator reports this expression's error") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _NotHere("a boolean or non-numeric scalar follows NumPy's rules on the host")
        if isinstance(value, int):
            if not _INT64[0] <= value <= _INT64[1]:
                raise _NotHere("an integer beyond int64 is NumPy's error to report")
            self.params.append(("i", value))
            return f"s{len(self.params) - 1}", "I"
        self.params.append(("d", float(value)))
        return f"s{len(self.params) - 1}", "F"

    def _buffer(self, name: str) -> tuple[str, str]:
        if name in self.globals_read and name not in self.buffers:
            raise _NotHere("an expression reading a module global is evaluated on the host")
        buffer = self.buffers.get(name)
        if buffer is None:
            raise _NotHere(f"{name!r} is not a buffer")
        if buffer.dtype.name not in _DEVICE_TYPES:
            raise _NotHere(f"{buffer.dtype.name} inputs are read on the host")
        if name not in self.inputs:
            self.inputs.append(name)
        k = self.inputs.index(name)
        kind = "f" if buffer.dtype.kind == "float" else "i"
        if _squeezed(buffer.shape) == _squeezed(self.output.shape):
            return f"{_LOAD[buffer.dtype.name]}(in{k}, i)", kind      # the output's flat order
        strides = _broadcast_strides(buffer.shape, self.output.shape)
        if strides is None:
            raise _NotHere(f"{name} does not broadcast to the output's shape: the host says so")
        if name not in self.strides:
            self.params.append(("s", _shape8(strides)))
            self.strides[name] = f"s{len(self.params) - 1}"
        return (f"{_LOAD[buffer.dtype.name]}(in{k}, cr_index(i, {self._dims()}, "
                f"{self.strides[name]}))", kind)

    def _dims(self) -> str:
        """The parameter holding the output's dims (added once)."""
        if self.dims is None:
            self.params.append(("s", _shape8(self.output.shape)))
            self.dims = f"s{len(self.params) - 1}"
        return self.dims

    def _binary(self, n: ast.BinOp) -> tuple[str, str]:
        op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(n.op))
        if op is None:
            raise _NotHere(f"{ast.unparse(n)!r}: // % ** follow NumPy's integer rules on the host")
        left, right = self.emit(n.left), self.emit(n.right)
        if op == "/":
            return f"({_as(left, 'f')} / {_as(right, 'f')})", "f"
        kind = _promote(left[1], right[1], "arithmetic")
        if kind == "f":
            return f"({_as(left, 'f')} {op} {_as(right, 'f')})", "f"
        return f"((i64)((u64)({left[0]}) {op} (u64)({right[0]})))", "i"     # wraps, as int64 does

    def _call(self, name: str, args: list) -> tuple[str, str]:
        parts = [self.emit(a) for a in args]
        kinds = [k for _, k in parts]
        if name == "abs" and len(parts) == 1:
            code, kind = parts[0]
            if kind == "b":
                raise _NotHere("abs of a boolean follows NumPy's rules on the host")
            if kind in "fF":
                return f"fabs({_as(parts[0], 'f')})", "f"
            return f"((i64)({code}) < 0 ? (i64)(0ull - (u64)({code})) : (i64)({code}))", "i"
        if name == "sqrt" and len(parts) == 1 and kinds[0] != "b":
            return f"sqrt({_as(parts[0], 'f')})", "f"
        if name in ("min", "max", "minimum", "maximum") and len(parts) == 2:
            kind = _promote(kinds[0], kinds[1], name)
            fn = "cr_min" if name in ("min", "minimum") else "cr_max"
            suffix = "f" if kind == "f" else "i"
            return f"{fn}_{suffix}({_as(parts[0], kind)}, {_as(parts[1], kind)})", kind
        if name == "where" and len(parts) == 3:
            cond = parts[0]
            truth = cond[0] if cond[1] == "b" else f"({_as(cond, cond[1].lower())} != 0)"
            kind = _promote(kinds[1], kinds[2], "where")
            return f"({truth} ? {_as(parts[1], kind)} : {_as(parts[2], kind)})", kind
        raise _NotHere(f"{name}() is NumPy's own on the host (the device's rounds differently)")


def _broadcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> list[int] | None:
    """Per output dim, the input's element stride as NumPy broadcasts it to `out`
    (0 where it repeats); None when it does not broadcast (the host's error)."""
    if len(shape) > len(out):
        shape = _squeezed(shape)
        if len(shape) > len(out):
            return None
    shape = (1,) * (len(out) - len(shape)) + tuple(shape)
    strides, step = [0] * len(out), 1
    for d in range(len(out) - 1, -1, -1):
        if shape[d] == out[d]:
            strides[d] = step if shape[d] != 1 else 0
        elif shape[d] != 1:
            return None
        step *= shape[d]
    return strides


def _shape8(values) -> tuple[int, ...]:
    """Up to 8 dims (specs have at most 8), padded with 1 in front as a C Shape8."""
    values = list(values)
    return tuple([1] * (8 - len(values)) + values) if values else (1,) * 8


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape without its leading 1s: shapes equal so read in the same flat order."""
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def _promote(a: str, b: str, what: str) -> str:
    """NumPy 2's result kind of two operands ("F"/"I": Python numbers, weak)."""
    if "b" in (a, b):
        raise _NotHere(f"{what} on booleans follows NumPy's bool rules on the host")
    strong = {a, b} & {"f", "i"}
    if "f" in strong or (strong == {"i"} and "F" in (a, b)):
        return "f"
    if strong == {"i"}:
        return "i"
    return "f" if "F" in (a, b) else "i"       # scalars only: folded before, kept for safety


def _as(part: tuple[str, str], kind: str) -> str:
    code, have = part
    if kind == "f" and have not in "fF":
        return f"((double)({code}))"
    return code


def _source(code: str, kind: str, output: ElementType, input_types: list[str],
            scalar_kinds: list[str]) -> str:
    """The check kernels' source: the template with the reference `code` over
    inputs in0.. (their dtypes' names) and parameters s0.. ("d" double, "i" i64,
    "s" a Shape8: a broadcast input's strides or the output's dims)."""
    params = "".join(f"const {_C_TYPE[name]} *in{k}, " for k, name in enumerate(input_types))
    c_types = {"d": "double", "i": "i64", "s": "Shape8"}
    params += "".join(f"{c_types[t]} s{k}, " for k, t in enumerate(scalar_kinds))
    args = "".join(f"in{k}, " for k in range(len(input_types)))
    args += "".join(f"s{k}, " for k in range(len(scalar_kinds)))
    ref_type = {"f": "double", "i": "i64", "b": "bool"}[kind]
    text = _read(TEMPLATE)
    text = (text.replace("/*PARAMS*/", params).replace("/*ARGS*/", args)
            .replace("/*REF_TYPE*/", ref_type).replace("/*REF*/", code)
            .replace("/*OUT_TYPE*/", _C_TYPE[output.name])
            .replace("/*OUT_CODE*/", str(TYPE_CODES[_STORED.get(output.name, output.name)]))
            .replace("/*OUT_BOOL*/", "1" if output.kind == "bool" else "0")
            .replace("/*REF_KIND*/", {"f": "0", "i": "1", "b": "2"}[kind]))
    return _read(COMMON) + text


@functools.lru_cache(maxsize=None)
def _read(path: Path) -> str:
    return path.read_text()



def run_device_check(dc: DeviceCheck, check: Check, output: BufferArg,
                     launch_check, launch_show):
    """The check's CheckResult from its kernels: `launch_check(after)` runs
    cr_check over the whole output and gives its STATS_WORDS words (after: ~0 for
    the full pass, else the index past which the next mismatch is looked for);
    `launch_show(indices)` runs cr_check_show and gives SHOW_WORDS words per index.
    The first MAX_REPORTED mismatches are found one pass each, only on a failure."""
    import numpy as np
    from .check import MAX_REPORTED, CheckResult, Mismatch
    everything = (1 << 64) - 1
    stats = [int(w) for w in launch_check(everything)]
    mismatches, finite = stats[0], stats[3]
    indices: list[int] = []
    if mismatches:
        indices.append(stats[4])
        while len(indices) < min(MAX_REPORTED, mismatches):
            indices.append(int(launch_check(indices[-1])[4]))
    shown = []
    if indices:
        words = np.asarray(launch_show(indices), dtype=np.uint64).reshape(-1, SHOW_WORDS)
        for index, (out64, out_int, expected64, wrap_int) in zip(indices, words):
            shown.append((index, *_shown(dc, output.dtype, int(out64), int(out_int),
                                         int(expected64), int(wrap_int))))
    as_float = lambda w: float(np.uint64(w).view(np.float64))
    shape = output.shape
    return CheckResult(
        name=check.name, passed=mismatches == 0, count=math.prod(shape), mismatches=mismatches,
        max_abs_err=as_float(stats[1]) if finite else None,
        max_rel_err=as_float(stats[2]) if finite else None,
        first_mismatches=tuple(Mismatch(tuple(int(k) for k in np.unravel_index(i, shape)), o, e)
                               for i, o, e in shown),
        rtol=dc.rtol, atol=dc.atol, exact=dc.mode != "close")


def _shown(dc: DeviceCheck, dtype: ElementType, out64: int, out_int: int, expected64: int,
           wrap_int: int) -> tuple:
    """(output, expected) as check.py reports them: floats, or the integers' values."""
    import numpy as np
    as_float = lambda w: float(np.uint64(w).view(np.float64))
    # integers as their host arrays hold them (i1 / u1: int8 / uint8), signed or not
    is_signed = dtype.kind != "float" and dtype.numpy_dtype().kind == "i"
    integer = lambda w: w - (1 << 64) if is_signed and w >= 1 << 63 else w
    shown_out = as_float(out64) if dtype.kind == "float" else integer(out_int)
    if dc.mode == "bits" and dtype.kind != "float":
        return shown_out, integer(wrap_int)
    return shown_out, as_float(expected64)
