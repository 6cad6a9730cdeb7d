"""Sweep axes: the values one var takes, from a spec's `sweep:` or `--axis`.

Spec forms (SPEC section 3): `pow2(16, 28, 2)` (2^16, 2^18 .. 2^28), a YAML
list of numbers or of strings, `range(2, 8, 2)` (2, 4, 6, 8), or one value.
Command-line forms follow nvbench's `-a` grammar: `N=[1,2,3]`, `N=[2:8:2]`
(inclusive, stride 1 when left out), `N=5`, `K=[transposeNaive,transposeCoalesced]`,
and with `[pow2]` after the name the values are exponents of 2. Bounds are
inclusive in both, as nvbench's are.

A value that reads as a number is a number; any other is a string (SPEC
section 5: `{K}` puts it in the kernel's name, options, paths or signature,
and constraints compare it with `==`). One axis holds numbers or strings,
never both: `[1024, 2O48]` is a typo, not a string axis.

Range arithmetic is exact (fractions of the decimal text), so
`range(0, 1, 0.1)` has 11 values and `[0:1e308:1e-308]` is counted, not
computed. Every count is bounded (limits.py) before anything is expanded.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Iterator

from ..errors import SpecError, UsageError
from ..limits import (MAX_AXIS_EXPONENT, MAX_AXIS_STRING_CHARS, MAX_AXIS_VALUES, MAX_INT_BITS,
                      MAX_INT_DIGITS, MAX_POW2_EXPONENT, MAX_SWEEP_POINTS)

Number = int | float
Value = int | float | str


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[Value, ...]
    pow2: bool = False            # the values are powers of two (plots use a log axis)

    @property
    def strings(self) -> bool:
        return bool(self.values) and isinstance(self.values[0], str)


class AxisError(ValueError):
    """What is wrong with an axis; the caller adds where it was written."""


_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$", re.DOTALL)
_CLI = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\[\s*pow2\s*\])?\s*=\s*(.+?)\s*$",
                  re.DOTALL)
_FUNCTIONS = ("pow2", "range")


def exact_number(value: Any) -> Fraction:
    """A number (its decimal text, or an int or float) as an exact fraction;
    AxisError when it is not a number or is beyond what an axis may hold."""
    if isinstance(value, bool):
        raise AxisError(f"{value!r} is a boolean, not a number")
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise AxisError(f"an integer of {value.bit_length()} bits (at most {MAX_INT_BITS})")
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AxisError(f"{value!r} is not a finite number")
        value = repr(value)                 # its shortest decimal: 0.1 means 1/10
    text = str(value).strip().replace("_", "")
    if len(text) > MAX_INT_DIGITS:
        raise AxisError(f"a number of {len(text)} characters (at most {MAX_INT_DIGITS})")
    try:
        return Fraction(int(text, 0))
    except ValueError:
        pass
    try:
        decimal = Decimal(text)
    except InvalidOperation:
        raise AxisError(f"{_quote(text)} is not a number") from None
    if not decimal.is_finite():
        raise AxisError(f"{_quote(text)} is not a finite number")
    if decimal and abs(decimal.adjusted()) > MAX_AXIS_EXPONENT:
        raise AxisError(f"{_quote(text)} is out of range (exponents up to "
                        f"{MAX_AXIS_EXPONENT} either way)")
    return Fraction(decimal)


def plain(number: Fraction) -> Number:
    """A fraction as the var value it gives: an int when whole, else a float."""
    if number.denominator == 1:
        if number.numerator.bit_length() > MAX_INT_BITS:
            raise AxisError(f"{_quote(str(float(number)))} exceeds {MAX_INT_BITS} bits")
        return number.numerator
    return float(number)


def parse_number(text: Any) -> Number:
    return plain(exact_number(text))


def parse_value(value: Any) -> Value:
    """One listed value: a number when it reads as one, else a string."""
    if isinstance(value, (bool, int, float)):
        return parse_number(value)
    if not isinstance(value, str):
        raise AxisError(f"{_quote(value)} is neither a number nor a string")
    text = value.strip()
    try:
        return parse_number(text)
    except AxisError as exc:
        if _looks_numeric(text):
            raise exc from None             # 1e999, a 400-digit integer: not a string
    return string_value(text)


def string_value(text: str) -> str:
    if not text:
        raise AxisError("an empty string")
    if len(text) > MAX_AXIS_STRING_CHARS:
        raise AxisError(f"a string of {len(text)} characters (at most {MAX_AXIS_STRING_CHARS})")
    if not text.isprintable() or "{" in text or "}" in text:
        raise AxisError(f"{_quote(text)}: a string value holds printable characters and "
                        f"no braces")
    return text


def _looks_numeric(text: str) -> bool:
    return bool(re.fullmatch(r"[+-]?(\d[\d_]*\.?\d*|\.\d+|0[xXoObB][0-9a-fA-F_]+)"
                             r"([eE][+-]?\d+)?|[+-]?(inf|infinity|nan)", text, re.IGNORECASE))


def _quote(value: Any) -> str:
    from ..errors import excerpt
    return excerpt(value)


def range_count(start: Fraction, stop: Fraction, stride: Fraction) -> int:
    """How many values start, start + stride, ... <= stop holds (exact)."""
    if stride <= 0:
        raise AxisError(f"the stride must be positive, got {float(stride):g}")
    if stop < start:
        raise AxisError(f"the range {float(start):g}..{float(stop):g} is empty "
                        f"(the stop is below the start)")
    return math.floor((stop - start) / stride) + 1


def inclusive_range(start: Any, stop: Any, stride: Any = 1) -> list[Number]:
    """start, start + stride, ... up to stop inclusive, counted before it is built."""
    start, stop, stride = (exact_number(v) for v in (start, stop, stride))
    count = range_count(start, stop, stride)
    if count > MAX_AXIS_VALUES:
        raise AxisError(f"{_count_text(count)} values exceed the limit of {MAX_AXIS_VALUES} "
                        f"per axis")
    return [plain(start + i * stride) for i in range(count)]


def _count_text(count: int) -> str:
    return str(count) if count < 10**15 else f"about 10^{len(str(count)) - 1}"


def powers_of_two(exponents: list[Value]) -> tuple[int, ...]:
    out = []
    for e in exponents:
        if not isinstance(e, int) or not 0 <= e <= MAX_POW2_EXPONENT:
            raise AxisError(f"a pow2 exponent must be an integer in 0..{MAX_POW2_EXPONENT}, "
                            f"got {_quote(e)}")
        out.append(1 << e)
    return tuple(out)


def _checked(values: list[Value]) -> tuple[Value, ...]:
    if not values:
        raise AxisError("no values")
    if len(values) > MAX_AXIS_VALUES:
        raise AxisError(f"{len(values)} values exceed the limit of {MAX_AXIS_VALUES} per axis")
    kinds = {isinstance(v, str) for v in values}
    if len(kinds) > 1:
        word = next(v for v in values if isinstance(v, str))
        raise AxisError(f"an axis holds numbers or strings, not both ({_quote(word)} is not "
                        f"a number)")
    if len(set(values)) != len(values):
        raise AxisError("a value appears twice")
    return tuple(values)


def spec_axis(name: str, node: Any) -> Axis:
    """An axis from the spec's `sweep:` (raises AxisError)."""
    if isinstance(node, list):
        if len(node) > MAX_AXIS_VALUES:
            raise AxisError(f"{len(node)} values exceed the limit of {MAX_AXIS_VALUES} per axis")
        return Axis(name, _checked([parse_value(v) for v in node]))
    if isinstance(node, str) and (call := _CALL.match(node)):
        function, inner = call.groups()
        if function not in _FUNCTIONS:
            raise AxisError(f"{_quote(function)}() is not an axis function (pow2, range)")
        args = inner.split(",") if inner.strip() else []
        if not 2 <= len(args) <= 3:
            raise AxisError(f"{function}(start, stop[, stride]) takes 2 or 3 numbers, "
                            f"got {len(args)}")
        values = inclusive_range(*args)
        if function == "pow2":
            return Axis(name, _checked(list(powers_of_two(values))), pow2=True)
        return Axis(name, _checked(values))
    if isinstance(node, (dict, type(None))):
        raise AxisError("expected pow2(start, stop, stride), range(start, stop, stride), "
                        "a list or one value")
    return Axis(name, (parse_value(node),))


def cli_axis(text: str) -> Axis:
    """An axis from `--axis` in nvbench's grammar; a usage error quoting the token."""
    try:
        return _cli_axis(text)
    except AxisError as exc:
        raise UsageError(f"--axis {_quote(text)}: {exc} (expected e.g. 'N=[1024,4096]', "
                         f"'N=[2:8:2]', 'N[pow2]=[16:28:2]' or 'K=[name1,name2]')") from None


def _cli_axis(text: str) -> Axis:
    match = _CLI.match(text)
    if not match:
        raise AxisError("not NAME=VALUES or NAME[pow2]=VALUES")
    name, pow2, body = match.group(1), bool(match.group(2)), match.group(3)
    if body.startswith("[") != body.endswith("]"):
        raise AxisError("unbalanced brackets")
    if body.startswith("["):
        inner = body[1:-1].strip()
        if ":" in inner:
            parts = [p.strip() for p in inner.split(":")]
            if len(parts) not in (2, 3) or not all(parts):
                raise AxisError("a range is [start:stop] or [start:stop:stride]")
            values = inclusive_range(*parts)
        else:
            if not inner:
                raise AxisError("no values")
            values = [parse_value(p) for p in inner.split(",")]
    else:
        values = [parse_value(body)]
    if pow2:
        return Axis(name, _checked(list(powers_of_two(values))), pow2=True)
    return Axis(name, _checked(values))


def check_point_count(axes: list[Axis]) -> int:
    """The number of points, refused (AxisError) past MAX_SWEEP_POINTS: counted
    from the axes' lengths, before a single point exists."""
    total = math.prod(len(a.values) for a in axes)
    if total > MAX_SWEEP_POINTS:
        sizes = " x ".join(f"{a.name} {len(a.values)}" for a in axes)
        raise AxisError(f"{total} points ({sizes}) exceed the limit of {MAX_SWEEP_POINTS}")
    return total


def iter_points(axes: list[Axis]) -> Iterator[dict[str, Value]]:
    """The Cartesian product, the first axis outermost (as nested loops read);
    one empty point when there are no axes."""
    check_point_count(axes)
    names = [a.name for a in axes]
    for combo in itertools.product(*(a.values for a in axes)):
        yield dict(zip(names, combo))


def points(axes: list[Axis]) -> list[dict[str, Value]]:
    return list(iter_points(axes))


def override_text(value: Value) -> str:
    """A value as `--set` would give it: a string as a string literal."""
    if isinstance(value, str):
        return repr(value)
    return str(value) if isinstance(value, int) else repr(value)


def spec_error(name: str, exc: AxisError, node: Any) -> SpecError:
    return SpecError(str(exc), field=f"sweep.{name}",
                     line=node.line_of(name) if hasattr(node, "line_of") else None)
