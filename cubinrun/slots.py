"""Bind each expanded kernel parameter to where its value comes from.

`signature.expand` says what the kernel receives; the spec's args say what
the user gave. `bind_slots` walks both in the same order and pairs them, so
the dry-run can show every parameter's source and the launch can turn each
slot into the Python value the launcher takes (a device pointer, a number or
a 128-byte descriptor).
"""
from __future__ import annotations

from dataclasses import dataclass

from .signature import Leaf
from .spec import BufferRef, ConstArg, DescArg, ScalarArg, Spec, TupleArg


@dataclass(frozen=True)
class Slot:
    leaf: Leaf
    kind: str                 # "buffer", "null", "scalar", "tma", "desc_base"
    name: str                 # the argument (buffer or descriptor) it comes from
    value: int | float | None = None   # known now: scalars, descriptor shape/strides/padding
    desc: DescArg | None = None
    meta: dict | None = None           # Triton's tensordesc_meta entry for a tensordesc

    def describe(self) -> str:
        if self.kind == "buffer":
            return f"buffer {self.name}"
        if self.kind == "null":
            return "null pointer"
        if self.kind == "tma":
            return f"CUtensorMap over {self.desc.buffer} block {list(self.desc.block)}"
        if self.kind == "desc_base":
            return f"base of {self.desc.buffer}"
        return repr(self.value)


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Strides in elements of a contiguous C-order array."""
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def bind_slots(spec: Spec) -> list[Slot]:
    leaves = spec.leaves()
    values: list[tuple] = []          # (kind, name, value, desc, meta) in expansion order
    metas = iter(spec.tensordesc_meta or ())

    def visit(arg) -> None:
        if isinstance(arg, ConstArg):
            return
        if isinstance(arg, TupleArg):
            for item in arg.items:
                visit(item)
        elif isinstance(arg, BufferRef):
            values.append(("null", arg.name, None, None, None) if arg.buffer is None
                          else ("buffer", arg.buffer, None, None, None))
        elif isinstance(arg, ScalarArg):
            values.append(("scalar", arg.name, arg.value, None, None))
        elif isinstance(arg, DescArg):
            meta = next(metas, None) if arg.kind == "tensordesc" else None
            values.extend(v + (meta,) for v in _desc_values(spec, arg, len(values), leaves))

    for arg in spec.args:
        visit(arg)
    if len(values) != len(leaves):
        raise AssertionError(f"bound {len(values)} values to {len(leaves)} parameters")
    return [Slot(leaf, *value) for leaf, value in zip(leaves, values)]


def _desc_values(spec: Spec, desc: DescArg, start: int, leaves: list[Leaf]) -> list[tuple]:
    """A descriptor's parameters, following the leaves `expand` produced for it."""
    if desc.kind == "nvTmaDesc":
        return [("tma", desc.name, None, desc)]
    shape = spec.buffers[desc.buffer].shape
    strides = row_major_strides(shape)
    n = len(shape)
    # with Triton metadata: tma, n shapes, n strides; without: base, n shapes,
    # n strides, [padding], n shapes, n strides (see signature.tensordesc_leaves)
    if leaves[start].role == "desc.tma":
        count = 1 + 2 * n
    else:
        count = 1 + 4 * n + int(leaves[start + 1 + 2 * n].role == "desc.padding")
    out = []
    for leaf in leaves[start:start + count]:
        role = leaf.role
        if role == "desc.tma":
            out.append(("tma", desc.name, None, desc))
        elif role == "desc.base":
            out.append(("desc_base", desc.name, None, desc))
        elif role in ("desc.shape", "desc.shape2"):
            out.append(("scalar", desc.name, shape[leaf.index], desc))
        elif role in ("desc.strides", "desc.strides2"):
            out.append(("scalar", desc.name, strides[leaf.index], desc))
        elif role == "desc.padding":
            out.append(("scalar", desc.name, int(desc.padding == "nan"), desc))
    return out
