"""Independent references for half-precision parameter bytes: NumPy for fp16
(it rounds straight from the double) and exact rational arithmetic for bf16.
The launcher tests and the repro tests check launched bytes against them."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def fp16_bits(x: float) -> int:
    return int(np.array(x, dtype=np.float64).astype(np.float16).view(np.uint16))


def bf16_bits(x: float) -> int:
    """x rounded to nearest even as bfloat16, by exact rational arithmetic.

    Returns -1 when a finite x rounds past the largest finite bfloat16.
    """
    sign = 0x8000 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7FC0
    if math.isinf(x):
        return sign | 0x7F80
    magnitude = Fraction(abs(x))
    if magnitude == 0:
        return sign
    exponent = max(_floor_log2(magnitude), -126)     # bf16 normals start at 2**-126
    quantum = Fraction(2) ** (exponent - 7)          # 7 fraction bits
    units, rest = divmod(magnitude, quantum)
    if rest > quantum / 2 or (rest == quantum / 2 and units % 2):
        units += 1
    rounded = units * quantum
    if rounded >= 2 ** 128:
        return -1
    if rounded < Fraction(2) ** -126:
        return sign | int(units)                     # subnormal: units of 2**-133
    top = _floor_log2(rounded)
    fraction = int(rounded / Fraction(2) ** (top - 7)) - 128
    return sign | (top + 127) << 7 | fraction


def _floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    return e if Fraction(2) ** e <= q else e - 1
