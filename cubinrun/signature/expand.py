"""Expansion of a signature into the flat list of parameters the kernel really
receives, as Triton's NVIDIA driver does it: constexprs vanish, tuples
flatten in order, a tensor descriptor becomes a CUtensorMap or its
decomposed form, each followed by its shape and strides."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from ..dtypes import SCALAR_TYPES
from ..errors import SpecError
from ..limits import MAX_PARAMS
from .types import ConstexprType, ParamType, Signature, TensorDescType, TupleType


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
    from .aggregates import aggregate_of, size_align    # only for a struct, array or vector
    return size_align(aggregate_of(leaf_type))[0]
