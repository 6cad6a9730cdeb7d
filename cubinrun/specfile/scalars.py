"""Scalar argument values checked against their type's range."""
from __future__ import annotations

import math
from typing import Any

from ..dtypes import ElementType
from ..errors import SpecError, excerpt

# Finite values at or beyond these round to infinity under round-to-nearest-even.
FLOAT_OVERFLOW = {
    "fp16": 65520.0,
    "bf16": float.fromhex("0x1.ff0p127"),
    "fp32": float.fromhex("0x1.ffffffp127"),
}


def check_scalar_value(dtype: ElementType, value: Any) -> int | float:
    """Range-check a scalar for its type; SpecError (without location) if it does not fit."""
    if dtype.kind in ("int", "uint", "bool"):
        number = as_int(value)
        if number is None:
            raise SpecError(f"{dtype.name} needs an integer, got {excerpt(value)}")
        lo, hi = dtype.int_range()
        if not lo <= number <= hi:
            raise SpecError(f"{number} is out of range for {dtype.name} [{lo}, {hi}]")
        return number
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{dtype.name} needs a number, got {excerpt(value)}")
    limit = FLOAT_OVERFLOW.get(dtype.name)
    if isinstance(value, int) and abs(value) >= 2**1024:
        raise SpecError(f"{value} is out of range for {dtype.name}")
    as_float = float(value)
    if limit is not None and math.isfinite(as_float) and abs(as_float) >= limit:
        raise SpecError(f"{value} is out of range for {dtype.name} (it would round to infinity)")
    return as_float


def as_int(value: Any) -> int | None:
    """The value as an int, or None: a float such as 2048.0 is not silently an integer."""
    if isinstance(value, (bool, int)):
        return int(value)
    return None
