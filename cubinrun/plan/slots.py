"""Bind each expanded kernel parameter to where its value comes from.

`signature.expand` says what the kernel receives; the spec's args say what
the user gave. `bind_slots` walks both in the same order and pairs them, so
the dry-run can show every parameter's source and the launch can turn each
slot into the Python value the launcher takes (a device pointer, a number or
a 128-byte descriptor).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..signature import Leaf
from ..specfile import BufferRef, ConstArg, DescArg, ScalarArg, Spec, StructArg, TupleArg


@dataclass(frozen=True)
class Member:
    """A scalar or pointer inside a struct passed by value, where its bytes go."""
    path: str                 # p[2], p[1][0]
    offset: int
    type: str                 # a scalar name or *T
    kind: str                 # "scalar", "buffer" or "null"
    value: int | float | str | None    # the number, or the buffer's name
    at: int = 0               # bytes past the buffer's start ({into, at})

    def describe(self) -> str:
        return {"buffer": f"buffer {self.value}{_at(self.at)}",
                "null": "null"}.get(self.kind, repr(self.value))

    def to_json(self) -> dict:
        return {"name": self.path, "type": self.type, "offset": self.offset,
                "source": self.kind, "value": self.value if self.kind == "scalar" else None,
                "from": self.value if self.kind == "buffer" else None,
                **({"at": self.at} if self.at else {})}


def _at(at: int) -> str:
    return f" + {at} bytes" if at else ""


@dataclass(frozen=True)
class Slot:
    leaf: Leaf
    kind: str                 # "buffer", "null", "scalar", "tma", "desc_base", "struct"
    name: str                 # the argument (buffer or descriptor) it comes from
    value: int | float | None = None   # known now: scalars, descriptor shape/strides/padding
    desc: DescArg | None = None
    meta: dict | None = None           # Triton's tensordesc_meta entry for a tensordesc
    members: tuple[Member, ...] = ()   # a struct's scalars and pointers, by offset
    at: int = 0                        # a pointer into its buffer ({into, at}): bytes past its start

    def describe(self) -> str:
        if self.kind == "buffer":
            return f"buffer {self.name}{_at(self.at)}"
        if self.kind == "null":
            return "null pointer"
        if self.kind == "tma":
            return f"CUtensorMap over {self.desc.buffer} block {list(self.desc.block)}"
        if self.kind == "desc_base":
            return f"base of {self.desc.buffer}"
        if self.kind == "struct":
            shown = [m.describe() for m in self.members[:8]]
            more = len(self.members) - len(shown)
            return "{" + ", ".join(shown + ([f"... {more} more"] if more else [])) + "}"
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
                          else ("buffer", arg.buffer, None, None, None, (), arg.at))
        elif isinstance(arg, ScalarArg):
            values.append(("scalar", arg.name, arg.value, None, None))
        elif isinstance(arg, DescArg):
            meta = next(metas, None) if arg.kind == "tensordesc" else None
            values.extend(v + (meta,) for v in _desc_values(spec, arg, len(values), leaves))
        elif isinstance(arg, StructArg):
            values.append(("struct", arg.name, None, None, None, struct_members(arg)))

    for arg in spec.args:
        visit(arg)
    if len(values) != len(leaves):
        raise AssertionError(f"bound {len(values)} values to {len(leaves)} parameters")
    return [Slot(leaf, *value) for leaf, value in zip(leaves, values)]


def struct_members(arg: StructArg) -> tuple[Member, ...]:
    """The struct's scalars and pointers with their offsets (C layout)."""
    sources: list[tuple] = []             # (kind, value[, at])

    def visit(item) -> None:
        if isinstance(item, StructArg):
            for member in item.members:
                visit(member)
        elif isinstance(item, ScalarArg):
            sources.append(("scalar", item.value))
        else:                                   # a pointer: BufferRef
            sources.append(("null", None) if item.buffer is None
                           else ("buffer", item.buffer, item.at))

    from ..signature.aggregates import fields
    visit(arg)
    placed = fields(arg.type, arg.name)
    if len(placed) != len(sources):
        raise AssertionError(f"{arg.name}: {len(sources)} values for {len(placed)} fields")
    return tuple(Member(f.path, f.offset, f.type, *source)
                 for f, source in zip(placed, sources))


def _desc_values(spec: Spec, desc: DescArg, start: int, leaves: list[Leaf]) -> list[tuple]:
    """A descriptor's parameters, following the leaves `expand` produced for it."""
    if desc.kind == "nvTmaDesc":
        return [("tma", desc.name, None, desc)]
    shape = spec.buffers[desc.buffer].shape
    strides = row_major_strides(shape)
    n = len(shape)
    # with Triton metadata: tma, n shapes, n strides; without: base, n shapes,
    # n strides, [flags], n shapes, n strides (see signature.tensordesc_leaves)
    if leaves[start].role == "desc.tma":
        count = 1 + 2 * n
    else:
        flags = 0
        while leaves[start + 1 + 2 * n + flags].role in ("desc.padding", "desc.tf32"):
            flags += 1
        count = 1 + 4 * n + flags
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
        elif role == "desc.tf32":
            out.append(("scalar", desc.name, 0, desc))
    return out
