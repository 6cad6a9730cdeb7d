"""Sweep axes: the values one var takes, from a spec's `sweep:` or `--axis`.

Spec forms (SPEC section 3): `pow2(16, 28, 2)` (2^16, 2^18 .. 2^28), a YAML
list of numbers, `range(2, 8, 2)` (2, 4, 6, 8), or one number. Command-line
forms follow nvbench's `-a` grammar: `N=[1,2,3]`, `N=[2:8:2]` (inclusive,
stride 1 when left out), `N=5`, and with `[pow2]` after the name the values
are exponents of 2. Bounds are inclusive in both, as nvbench's are.

An axis never holds more than MAX_VALUES values and a sweep never more than
MAX_POINTS points, so a typo such as `[1:1000000000]` is an error, not a
process that eats the machine's memory.
"""
from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, UsageError

MAX_VALUES = 10_000
MAX_POINTS = 100_000
MAX_POW2_EXPONENT = 63

Number = int | float


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[Number, ...]
    pow2: bool = False            # the values are powers of two (plots use a log axis)


class AxisError(ValueError):
    """What is wrong with an axis; the caller adds where it was written."""


_CALL = re.compile(r"^\s*(pow2|range)\s*\((.*)\)\s*$")
_CLI = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\[\s*pow2\s*\])?\s*=\s*(.+?)\s*$")


def parse_number(text: Any) -> Number:
    if isinstance(text, bool):
        raise AxisError(f"{text!r} is not a number")
    if isinstance(text, (int, float)):
        value = text
    else:
        text = str(text).strip()
        try:
            value = int(text, 0)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise AxisError(f"{text!r} is not a number") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise AxisError(f"{value!r} is not a finite number")
        if value.is_integer():
            return int(value)
    return value


def inclusive_range(start: Number, stop: Number, stride: Number) -> list[Number]:
    if stride <= 0:
        raise AxisError(f"the stride must be positive, got {stride}")
    if stop < start:
        raise AxisError(f"the range {start}..{stop} is empty (the stop is below the start)")
    count = math.floor((stop - start) / stride + 1e-9) + 1
    if count > MAX_VALUES:
        raise AxisError(f"{count} values exceed the limit of {MAX_VALUES} per axis")
    values = [start + i * stride for i in range(count)]
    return [parse_number(v) if isinstance(v, float) else v for v in values]


def powers_of_two(exponents: list[Number]) -> tuple[int, ...]:
    out = []
    for e in exponents:
        if not isinstance(e, int) or not 0 <= e <= MAX_POW2_EXPONENT:
            raise AxisError(f"a pow2 exponent must be an integer in 0..{MAX_POW2_EXPONENT}, "
                            f"got {e!r}")
        out.append(1 << e)
    return tuple(out)


def _checked(values: list[Number]) -> tuple[Number, ...]:
    if not values:
        raise AxisError("no values")
    if len(values) > MAX_VALUES:
        raise AxisError(f"{len(values)} values exceed the limit of {MAX_VALUES} per axis")
    if len(set(values)) != len(values):
        raise AxisError("a value appears twice")
    return tuple(values)


def spec_axis(name: str, node: Any) -> Axis:
    """An axis from the spec's `sweep:` (raises AxisError)."""
    if isinstance(node, list):
        return Axis(name, _checked([parse_number(v) for v in node]))
    if isinstance(node, str) and (call := _CALL.match(node)):
        function, inner = call.groups()
        args = [parse_number(a) for a in inner.split(",")] if inner.strip() else []
        if not 2 <= len(args) <= 3:
            raise AxisError(f"{function}(start, stop[, stride]) takes 2 or 3 numbers, "
                            f"got {len(args)}")
        values = inclusive_range(*args[:2], args[2] if len(args) == 3 else 1)
        if function == "pow2":
            return Axis(name, _checked(list(powers_of_two(values))), pow2=True)
        return Axis(name, _checked(values))
    if isinstance(node, (dict, type(None))):
        raise AxisError("expected pow2(start, stop, stride), range(start, stop, stride), "
                        "a list or a number")
    return Axis(name, (parse_number(node),))


def cli_axis(text: str) -> Axis:
    """An axis from `--axis` in nvbench's grammar; a usage error quoting the token."""
    try:
        return _cli_axis(text)
    except AxisError as exc:
        raise UsageError(f"--axis {text!r}: {exc} (expected e.g. 'N=[1024,4096]', "
                         f"'N=[2:8:2]' or 'N[pow2]=[16:28:2]')") from None


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
            values = inclusive_range(*(parse_number(p) for p in parts[:2]),
                                     parse_number(parts[2]) if len(parts) == 3 else 1)
        else:
            if not inner:
                raise AxisError("no values")
            values = [parse_number(p) for p in inner.split(",")]
    else:
        values = [parse_number(body)]
    if pow2:
        return Axis(name, _checked(list(powers_of_two(values))), pow2=True)
    return Axis(name, _checked(values))


def points(axes: list[Axis]) -> list[dict[str, Number]]:
    """The Cartesian product, the first axis outermost (as nested loops read);
    one empty point when there are no axes."""
    total = math.prod(len(a.values) for a in axes)
    if total > MAX_POINTS:
        raise AxisError(f"{total} points exceed the limit of {MAX_POINTS}")
    names = [a.name for a in axes]
    return [dict(zip(names, combo)) for combo in itertools.product(*(a.values for a in axes))]


def override_text(value: Number) -> str:
    """A value as `--set` would give it."""
    return str(value) if isinstance(value, int) else repr(value)


def spec_error(name: str, exc: AxisError, node: Any) -> SpecError:
    return SpecError(str(exc), field=f"sweep.{name}",
                     line=node.line_of(name) if hasattr(node, "line_of") else None)
