"""Kernel signatures in Triton's vocabulary: parsing, and expansion into the
flat list of parameters the kernel really receives.

A spec's signature maps names to types (strings, or YAML lists for tuples).
`expand` walks it the way Triton's NVIDIA driver does: constexprs vanish,
tuples flatten in order, and a tensor descriptor becomes either a 128-byte
CUtensorMap (when Triton's `tensordesc_meta` has an entry for it) or a base
pointer with shape, strides and a padding flag, followed in both cases by the
shape (i32) and the strides (i64).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence, Union

from .dtypes import ELEMENT_TYPES, SCALAR_TYPES, ElementType
from .errors import SpecError, excerpt
from .limits import MAX_PARAMS, MAX_SIGNATURE_CHARS, MAX_TYPE_CHARS, MAX_TYPE_DEPTH

# --- parameter types -------------------------------------------------------


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


# --- parsing ---------------------------------------------------------------

_POINTER = re.compile(r"\*(k?)([a-z0-9]+)")
_TENSORDESC = re.compile(r"tensordesc<\s*([a-z0-9]+)\s*\[([^\]]*)\]\s*>")


def parse_type(value, field: str) -> ParamType:
    """One parameter type from a spec value (a string, or a list for a tuple)."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise SpecError("an empty tuple has no parameters", field=field)
        return TupleType(tuple(parse_type(item, f"{field}[{i}]")
                               for i, item in enumerate(value)))
    if not isinstance(value, str):
        raise SpecError(f"a type must be a string or a list, got {excerpt(value)}", field=field)
    check_type_bounds(value, field)
    text = value.strip()
    if text.startswith("(") and text.endswith(")"):
        return parse_compact(text[1:-1], field=field, as_tuple=True)
    if text in SCALAR_TYPES:
        return ScalarType(SCALAR_TYPES[text])
    if text == "constexpr":
        return ConstexprType()
    if text == "nvTmaDesc":
        return TmaDescType()
    if m := _POINTER.fullmatch(text):
        pointee = ELEMENT_TYPES.get(m.group(2))
        if pointee is None:
            raise SpecError(f"unknown pointee type {excerpt(m.group(2))} in {excerpt(text)}; "
                            f"known: {', '.join(ELEMENT_TYPES)}", field=field)
        return PointerType(pointee, const=bool(m.group(1)))
    if m := _TENSORDESC.fullmatch(text):
        dtype = ELEMENT_TYPES.get(m.group(1))
        if dtype is None:
            raise SpecError(f"unknown element type {excerpt(m.group(1))} in {excerpt(text)}", field=field)
        try:
            block = tuple(int(d) for d in m.group(2).split(","))
        except ValueError:
            raise SpecError(f"tensordesc block dims must be integers: {excerpt(text)}",
                            field=field) from None
        if not 1 <= len(block) <= 5 or any(d <= 0 for d in block):
            raise SpecError(f"tensordesc needs 1 to 5 positive block dims: {excerpt(text)}",
                            field=field)
        return TensorDescType(dtype, block)
    from .aggregates import parse_aggregate     # here: it builds on this module
    if (aggregate := parse_aggregate(text, field)) is not None:
        return aggregate
    raise SpecError(f"unknown type {excerpt(value)}; expected one of {', '.join(SCALAR_TYPES)}, "
                    "*T, *kT, constexpr, nvTmaDesc, tensordesc<T[dims]>, struct[T, ...], "
                    "T[n], TxN or a list", field=field)


def check_type_bounds(text: str, field: str, max_chars: int = MAX_TYPE_CHARS) -> None:
    """Refuse a type string too long or nested too deeply to parse (limits.py),
    before the recursive parser sees it."""
    if len(text) > max_chars:
        raise SpecError(f"a type of {len(text)} characters (at most {max_chars}): "
                        f"{excerpt(text)}", field=field)
    depth = deepest = 0
    for ch in text:
        if ch in "([<":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]>":
            depth -= 1
    if deepest > MAX_TYPE_DEPTH:
        raise SpecError(f"a type nested more than {MAX_TYPE_DEPTH} levels deep: "
                        f"{excerpt(text)}", field=field)


def _split_top_level(text: str) -> list[str]:
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


def parse_compact(text: str, field: str = "signature", as_tuple: bool = False):
    """The compact form `"*fp32,*fp32,i32"`; `(a,b)` is a tuple; `""` is no parameters.

    Returns a Signature with names arg0, arg1, ... (or a TupleType for the
    inside of parentheses).
    """
    if not as_tuple:
        check_type_bounds(text, field, MAX_SIGNATURE_CHARS)
    if not text.strip() and not as_tuple:
        return Signature(())                    # `--signature ""`: no parameters
    parts = _split_top_level(text)
    if any(not p for p in parts):
        raise SpecError(f"empty type in {excerpt(text)}", field=field)
    types = [parse_type(p, f"{field}[{i}]") for i, p in enumerate(parts)]
    if as_tuple:
        return TupleType(tuple(types))
    return Signature(tuple((f"arg{i}", ty) for i, ty in enumerate(types)))


def parse_signature(mapping, field: str = "signature") -> Signature:
    """A spec's `signature:` mapping, in order; `{}` is a kernel with no parameters."""
    if not isinstance(mapping, dict):
        raise SpecError("must be a mapping of parameter name to type ({} for a kernel "
                        "with no parameters)", field=field)
    params = []
    for name, value in mapping.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(f"parameter name {excerpt(name)} is not an identifier", field=field)
        params.append((name, parse_type(value, f"{field}.{name}")))
    return Signature(tuple(params))


# --- expansion -------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """One parameter as the kernel receives it.

    `type` is a scalar name, `*T` / `*kT`, or `nvTmaDesc`. `path` names it for
    people (`t[1]`, `desc.shape[0]`); `role` says where its value comes from:
    `value` (the argument itself), or for a tensor descriptor `desc.tma`,
    `desc.base`, `desc.shape`, `desc.strides`, `desc.padding`, `desc.tf32`,
    followed by `desc.shape2` / `desc.strides2` for the trailing copies.
    """
    path: str
    type: str
    role: str = "value"
    index: int = 0              # which dim, for shape/strides roles


def tensordesc_leaves(path: str, desc: TensorDescType, has_meta: bool,
                      flags: int = 1) -> list[Leaf]:
    n = desc.ndim
    if has_meta:
        head = [Leaf(f"{path}.tma", "nvTmaDesc", "desc.tma")]
    else:
        head = [Leaf(f"{path}.base", f"*{desc.dtype.name}", "desc.base")]
        head += [Leaf(f"{path}.shape[{i}]", "i64", "desc.shape", i) for i in range(n)]
        head += [Leaf(f"{path}.strides[{i}]", "i64", "desc.strides", i) for i in range(n)]
        # i1 flags: Triton 3.4 passes none, 3.5+ `padding == "nan"`, 3.7+ also
        # `round_f32_to_tf32` (cubinrun's descriptors never round: 0)
        head += [Leaf(f"{path}.{name}", "i1", role)
                 for name, role in DESC_FLAGS[:flags]]
    tail = [Leaf(f"{path}.shape[{i}]", "i32", "desc.shape2", i) for i in range(n)]
    tail += [Leaf(f"{path}.strides[{i}]", "i64", "desc.strides2", i) for i in range(n)]
    return head + tail


DESC_FLAGS = (("padding_nan", "desc.padding"), ("round_f32_to_tf32", "desc.tf32"))


def expand(signature: Signature, tensordesc_meta: Sequence | None = None,
           flags: int = 1) -> list[Leaf]:
    """The flat parameter list (without the trailing scratch pointers).

    `tensordesc_meta` is Triton's list, one entry per tensor descriptor in
    order; an entry that is None (or no list at all) means the kernel takes
    the decomposed form, which ends with `flags` i1 flags (see tensordesc_leaves).
    """
    descs = sum(1 for _ in _walk_descs(ty for _, ty in signature.params))
    if tensordesc_meta and len(tensordesc_meta) != descs:
        raise SpecError(f"tensordesc_meta has {len(tensordesc_meta)} entries but the "
                        f"signature has {descs} tensor descriptors", field="signature")
    meta = iter(tensordesc_meta or [None] * descs)
    out: list[Leaf] = []

    def visit(path: str, ty: ParamType) -> None:
        if isinstance(ty, ConstexprType):
            return
        if isinstance(ty, TupleType):
            for i, item in enumerate(ty.items):
                visit(f"{path}[{i}]", item)
        elif isinstance(ty, TensorDescType):
            out.extend(tensordesc_leaves(path, ty, next(meta) is not None, flags))
        else:
            out.append(Leaf(path, str(ty)))

    for name, ty in signature.params:
        visit(name, ty)
        if len(out) > MAX_PARAMS:
            raise SpecError(f"the signature expands to more than {MAX_PARAMS} parameters "
                            "(a kernel takes at most 32764 bytes of them)", field="signature")
    return out


def _walk_descs(types: Iterable[ParamType]) -> Iterator[TensorDescType]:
    for ty in types:
        if isinstance(ty, TupleType):
            yield from _walk_descs(ty.items)
        elif isinstance(ty, TensorDescType):
            yield ty


def leaf_size(leaf_type: str) -> int:
    """Bytes the parameter occupies (what a cubin's KPARAM_INFO records)."""
    if leaf_type.startswith("*"):
        return 8
    if leaf_type == "nvTmaDesc":
        return 128
    if leaf_type in SCALAR_TYPES:
        return SCALAR_TYPES[leaf_type].size
    from .aggregates import aggregate_of, size_align
    return size_align(aggregate_of(leaf_type))[0]
