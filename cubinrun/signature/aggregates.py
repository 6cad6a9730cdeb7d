"""Structs, arrays and vectors passed by value, as CUDA C++ kernels take them
(`struct Params {int n; float alpha; float *x;}`, `float4`, `int k[3]` in a
struct): their types, their spelling in a signature and their C layout.

Spelling:
- `struct[T, ...]`: the members in order; a member is a scalar, a pointer
  `*T` / `*kT`, or another struct, array or vector;
- `T[n]`: n elements of T (a C array member; as a parameter, a struct that
  holds only the array, as `std::array` is);
- `TxN` (N = 1 to 4): CUDA's vector types, `fp32x4` is `float4`, `i32x2` is
  `int2`, `fp16x2` is `__half2`; the same bytes as `T[N]` but aligned as
  vector_types.h aligns them (2 elements: twice the element, 4 elements:
  four times, at most 16 bytes; 1 or 3: the element's).

Layout follows C: each member at the next multiple of its alignment, the
struct aligned as its most aligned member and its size rounded up to that.
That is what nvcc does for kernel parameters (checked against cubins: a
`float4` after a 24-byte struct sits at offset 32). Padding bytes are zero.

A struct is one kernel parameter; `fields` lists its scalars and pointers
with their offsets, in the order their values are given, so the launch can
pack the bytes (plan/packing.py) with device addresses filled in.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Union

from ..dtypes import SCALAR_TYPES
from ..errors import SpecError
from .types import PointerType, ScalarType, parse_scalar_or_pointer, split_top_level

# The most bytes of parameters a kernel may take (CUDA 12.1+ on Volta and later).
MAX_PARAM_BYTES = 32764
MAX_NESTING = 8

_VECTOR = re.compile(r"([a-z0-9]+)x([1-4])")
_ARRAY = re.compile(r"(.+)\[\s*([0-9]+)\s*\]")


@dataclass(frozen=True)
class StructType:
    members: tuple["Member", ...]

    def __str__(self) -> str:
        return "struct[" + ",".join(map(str, self.members)) + "]"


@dataclass(frozen=True)
class ArrayType:
    element: "Member"
    count: int
    vector: bool = False        # a CUDA vector type: aligned as vector_types.h says

    def __str__(self) -> str:
        if self.vector:
            return f"{self.element}x{self.count}"
        base, dims = self, []               # C order: i32[2][3] is 2 arrays of 3
        while isinstance(base, ArrayType) and not base.vector:
            dims.append(base.count)
            base = base.element
        return str(base) + "".join(f"[{d}]" for d in dims)


Aggregate = Union[StructType, ArrayType]
Member = Union[ScalarType, PointerType, StructType, ArrayType]


@dataclass(frozen=True)
class Field:
    """One scalar or pointer inside an aggregate: `p[2]`, `p[1][0]`."""
    path: str
    offset: int
    type: str                   # a scalar name or *T / *kT


def is_aggregate(ty) -> bool:
    return isinstance(ty, (StructType, ArrayType))


def member_types(ty: Aggregate) -> tuple[Member, ...]:
    """What the value list gives, in order: the members, or each element."""
    return ty.members if isinstance(ty, StructType) else (ty.element,) * ty.count


# --- parsing ---------------------------------------------------------------


def parse_aggregate(text: str, field: str) -> Aggregate | None:
    """The aggregate `text` spells, or None when it does not look like one."""
    if not (text.startswith("struct[") or _VECTOR.fullmatch(text) or _ARRAY.fullmatch(text)):
        return None
    ty = _parse(text, field, 0)
    return ty if is_aggregate(ty) else None


def _parse(text: str, field: str, depth: int) -> Member:
    if depth > MAX_NESTING:
        raise SpecError(f"structs and arrays nest at most {MAX_NESTING} deep", field=field)
    spelled = text
    dims = []                       # `T[2][3]` is 2 arrays of 3, as in C: read from the end
    while (m := _ARRAY.fullmatch(text)) and _closes_at_end(text, len(m.group(1))):
        if len(m.group(2)) > 6:                     # more than any parameter can hold
            raise SpecError(f"{_short(spelled)} has too many elements", field=field)
        dims.append(int(m.group(2)))
        text = m.group(1).strip()
        if depth + len(dims) > MAX_NESTING:
            raise SpecError(f"structs and arrays nest at most {MAX_NESTING} deep", field=field)
    if any(count < 1 for count in dims):
        raise SpecError(f"{_short(spelled)}: an array needs at least one element", field=field)
    if text.startswith("struct[") and _closes_at_end(text, len("struct")):
        inner = text[len("struct["):-1]
        if not inner.strip():
            raise SpecError("struct[] needs at least one member", field=field)
        parts = split_top_level(inner)
        if len(parts) > MAX_PARAM_BYTES or any(not p for p in parts):
            raise SpecError(f"bad member list in {_short(text)}", field=field)
        ty: Member = StructType(tuple(_parse(p, field, depth + len(dims) + 1) for p in parts))
    elif m := _VECTOR.fullmatch(text):
        element = SCALAR_TYPES.get(m.group(1))
        if element is None or element.kind == "bool":
            raise SpecError(f"{_short(text)}: a vector's element is one of "
                            f"{', '.join(n for n, t in SCALAR_TYPES.items() if t.kind != 'bool')}",
                            field=field)
        ty = ArrayType(ScalarType(element), int(m.group(2)), vector=True)
    elif (simple := parse_scalar_or_pointer(text, field)) is not None:
        ty = simple
    elif text in ("constexpr", "nvTmaDesc") or text.startswith(("tensordesc", "(")):
        raise SpecError(f"{_short(text)} cannot be a struct or array member (members are "
                        "scalars, pointers, structs, arrays and vectors)", field=field)
    else:
        raise SpecError(f"unknown type {_short(text)} (a member is a scalar, *T, "
                        "struct[...], T[n] or TxN)", field=field)
    for count in dims:
        ty = ArrayType(ty, count)
    if is_aggregate(ty) and size_align(ty)[0] > MAX_PARAM_BYTES:
        raise SpecError(f"{_short(str(ty))} is {size_align(ty)[0]} bytes; kernel parameters "
                        f"hold at most {MAX_PARAM_BYTES}", field=field)
    return ty


def _closes_at_end(text: str, open_at: int) -> bool:
    """Whether the bracket at `open_at` is closed by the last character."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return i == len(text) - 1
    return False


def _short(text: str, limit: int = 60) -> str:
    return repr(shortened(text, limit))


def shortened(text: str, limit: int = 60) -> str:
    """A type's spelling cut for a one-line message."""
    return text if len(text) <= limit else text[:limit] + "..."


# --- layout ----------------------------------------------------------------


@lru_cache(maxsize=256)
def size_align(ty: Member) -> tuple[int, int]:
    """Bytes and alignment by C rules."""
    if isinstance(ty, ScalarType):
        return ty.dtype.size, ty.dtype.size
    if isinstance(ty, PointerType):
        return 8, 8
    if isinstance(ty, ArrayType):
        size, align = size_align(ty.element)
        if ty.vector and ty.count in (2, 4):
            align = min(size * ty.count, 16)
        return size * ty.count, align
    offset, align = 0, 1
    for offset_of, member in _placed(ty):
        offset = offset_of + size_align(member)[0]
        align = max(align, size_align(member)[1])
    return _round_up(offset, align), align


def _placed(ty: StructType) -> list[tuple[int, Member]]:
    """Each member with its offset."""
    out, offset = [], 0
    for member in ty.members:
        size, align = size_align(member)
        offset = _round_up(offset, align)
        out.append((offset, member))
        offset += size
    return out


def _round_up(n: int, align: int) -> int:
    return -(-n // align) * align


def offsets(ty: Aggregate) -> list[int]:
    """Where each member (or element) starts."""
    if isinstance(ty, StructType):
        return [offset for offset, _ in _placed(ty)]
    step = size_align(ty.element)[0]
    return [i * step for i in range(ty.count)]


def fields(ty: Aggregate, path: str, base: int = 0) -> list[Field]:
    """Every scalar and pointer inside, depth first, in the order values are given."""
    out: list[Field] = []
    for i, (offset, member) in enumerate(zip(offsets(ty), member_types(ty))):
        here = f"{path}[{i}]"
        if is_aggregate(member):
            out += fields(member, here, base + offset)
        else:
            out.append(Field(here, base + offset, str(member)))
    return out


@lru_cache(maxsize=256)
def aggregate_of(leaf_type: str) -> Aggregate | None:
    """The aggregate a leaf's type string names (as str() wrote it), else None."""
    return parse_aggregate(leaf_type, "signature")
