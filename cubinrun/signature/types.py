"""The types a kernel parameter can have, in Triton's vocabulary, and the
parsing of the simplest ones (scalars and pointers), which every other type
builds on."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from ..dtypes import ELEMENT_TYPES, SCALAR_TYPES, ElementType
from ..errors import SpecError, excerpt


@dataclass(frozen=True)
class ScalarType:
    dtype: ElementType

    def __str__(self) -> str:
        return self.dtype.name


@dataclass(frozen=True)
class PointerType:
    pointee: ElementType
    const: bool = False

    def __str__(self) -> str:
        return ("*k" if self.const else "*") + self.pointee.name


@dataclass(frozen=True)
class ConstexprType:
    def __str__(self) -> str:
        return "constexpr"


@dataclass(frozen=True)
class TmaDescType:
    def __str__(self) -> str:
        return "nvTmaDesc"


@dataclass(frozen=True)
class TensorDescType:
    dtype: ElementType
    block: tuple[int, ...]      # the block shape written in the type

    @property
    def ndim(self) -> int:
        return len(self.block)

    def __str__(self) -> str:
        return f"tensordesc<{self.dtype.name}[{', '.join(map(str, self.block))}]>"


@dataclass(frozen=True)
class TupleType:
    items: tuple["ParamType", ...]

    def __str__(self) -> str:
        return "(" + ",".join(map(str, self.items)) + ")"


ParamType = Union[ScalarType, PointerType, ConstexprType, TmaDescType,
                  TensorDescType, TupleType]


@dataclass(frozen=True)
class Signature:
    """The spec's parameters, in order, before expansion."""
    params: tuple[tuple[str, ParamType], ...]

    def names(self) -> list[str]:
        return [name for name, _ in self.params]

    def __getitem__(self, name: str) -> ParamType:
        for key, ty in self.params:
            if key == name:
                return ty
        raise KeyError(name)

    def __str__(self) -> str:
        return ",".join(str(ty) for _, ty in self.params)


_POINTER = re.compile(r"\*(k?)([a-z0-9]+)")


def parse_scalar_or_pointer(text: str, field: str) -> ScalarType | PointerType | None:
    """`fp32`, `*fp32` or `*kfp32`; None when `text` is neither."""
    if text in SCALAR_TYPES:
        return ScalarType(SCALAR_TYPES[text])
    if m := _POINTER.fullmatch(text):
        pointee = ELEMENT_TYPES.get(m.group(2))
        if pointee is None:
            raise SpecError(f"unknown pointee type {excerpt(m.group(2))} in {excerpt(text)}; "
                            f"known: {', '.join(ELEMENT_TYPES)}", field=field)
        return PointerType(pointee, const=bool(m.group(1)))
    return None


def split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside (), [] or <>."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]
