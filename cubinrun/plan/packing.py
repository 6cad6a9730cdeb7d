"""The bytes of a struct, array or vector passed by value.

The launcher takes such a parameter as an opaque block of its size (one
generic converter, whatever the struct), so its bytes are made here: each
scalar stored as the kernel reads it, little endian, each pointer as its
device address, padding zero. Scalars were range-checked when the spec was
read; fp16 and bf16 round to nearest even straight from the double, as the
launcher does for a scalar parameter (bf16 is not rounded twice through fp32).
"""
from __future__ import annotations

import math
import struct
from typing import Callable, Iterable

from .slots import Member

_FORMATS = {"i1": "<B", "u1": "<B", "i8": "<b", "u8": "<B", "i16": "<h", "u16": "<H",
            "i32": "<i", "u32": "<I", "i64": "<q", "u64": "<Q", "fp32": "<f", "fp64": "<d"}


def scalar_bytes(type_name: str, value: int | float) -> bytes:
    """One scalar as the kernel reads it."""
    if type_name == "fp16":
        return round_to_16_bits(value, 10, 15).to_bytes(2, "little")
    if type_name == "bf16":
        return round_to_16_bits(value, 7, 127).to_bytes(2, "little")
    if type_name in ("i1", "u1"):
        value = int(bool(value))
    return struct.pack(_FORMATS[type_name], value)


def pack_struct(size: int, members: Iterable[Member], address_of: Callable[[str], int]) -> bytes:
    """`size` bytes with every member at its offset; `address_of` gives a buffer's device
    address."""
    blob = bytearray(size)
    for m in members:
        if m.kind == "scalar":
            raw = scalar_bytes(m.type, m.value)
        else:
            raw = (address_of(m.value) + m.at if m.kind == "buffer" else 0).to_bytes(8, "little")
        blob[m.offset:m.offset + len(raw)] = raw
    return bytes(blob)


def round_to_16_bits(value: float, frac_bits: int, bias: int) -> int:
    """The bits of a 16-bit float with `frac_bits` fraction bits and exponent bias
    `bias` (fp16: 10, 15; bf16: 7, 127) nearest to `value`, ties to even. NaN
    becomes the quiet NaN of its sign; a finite value that rounds past the largest
    finite one is an OverflowError (the spec's range check comes first)."""
    value = float(value)
    sign = 0x8000 if math.copysign(1.0, value) < 0 else 0
    inf = ((1 << (15 - frac_bits)) - 1) << frac_bits
    if math.isnan(value):
        return sign | inf | (1 << (frac_bits - 1))
    if math.isinf(value):
        return sign | inf
    if value == 0:
        return sign
    mantissa, exponent = math.frexp(abs(value))     # |value| = mantissa * 2**exponent
    # the result's last bit weighs 2**(scale - frac_bits), scale >= 1 - bias (subnormals)
    scale = max(exponent - 1, 1 - bias)
    units = mantissa * 2.0 ** (exponent - scale + frac_bits)   # exact: a power-of-two scaling
    whole = math.floor(units)
    rest = units - whole
    if rest > 0.5 or (rest == 0.5 and whole & 1):
        whole += 1
    # `whole` counts units including the leading bit, so adding it to the exponent
    # field less one also carries a round-up into the exponent
    magnitude = ((scale + bias - 1) << frac_bits) + whole
    if magnitude >= inf:
        raise OverflowError(f"{value} is out of range for a {16 - frac_bits - 1}-bit-exponent float")
    return sign | magnitude
