"""A captured launch's parameters as spec entries: names, types and values,
with every pointer relocated to the buffer of the memory region it points
into.

Each region (an allocation, from the launch's lowest pointer into it to its
end) becomes one buffer, owned by the first pointer at its start; any other
pointer into it is `{into: OWNER, at: BYTES}` (docs/spec.md). A CUDA
parameter that CUPTI gave as raw bytes becomes a scalar (1, 2, 4 or 8 bytes),
a `*u8` when it is one pointer, an array of words, or a struct of word arrays
and `*u8` members when pointers sit inside it.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class NotExpressible(Exception):
    """A launch the spec format cannot express; the message is the reason."""


@dataclass
class PointerUse:
    """A pointer (a parameter, or a struct member named `p[i]`) into region `region`."""
    name: str
    region: int
    at: int
    dtype: str = "u8"                # the pointee (Triton's type), for the buffer's dtype
    shape: list | None = None        # a tensor descriptor's shape (else the region's elements)
    descriptor: dict | None = None   # a tensor descriptor's own keys (padding): it wraps its buffer


@dataclass
class Params:
    signature: dict = field(default_factory=dict)     # name -> type (empty: Triton's own)
    args: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    pointers: list[PointerUse] = field(default_factory=list)
    # where each pointer's value goes once buffers are known: (holder, key, name)
    _slots: list[tuple] = field(default_factory=list)

    def pointer(self, use: PointerUse, holder, key) -> None:
        self.pointers.append(use)
        self._slots.append((holder, key, use))

    def relocate(self, buffer_for) -> dict[int, str]:
        """Fill every pointer's value: the owner of each region gets
        `buffer_for(region, use)` (a buffer mapping), the others an alias.
        Returns the owner's name by region."""
        owners: dict[int, str] = {}
        for use in self.pointers:
            if use.at == 0 and use.region not in owners:
                owners[use.region] = use.name
        for holder, key, use in self._slots:
            owner = owners.get(use.region)
            if owner is None:
                raise NotExpressible(f"no pointer at the start of region {use.region}")
            value = (buffer_for(use.region, use) if owner == use.name
                     else {"into": owner, "at": use.at})
            holder[key] = value if use.descriptor is None else {"buffer": value, **use.descriptor}
        return owners


def triton_params(record: dict) -> Params:
    """From the hook's record: arguments by the kernel's own names; a tuple is a
    list of its elements (the constexprs left out, as the entry's parameters do)."""
    params = Params()
    for arg in record["args"]:
        if arg["kind"] == "constexpr":
            params.constants[arg["name"]] = arg["value"]
        else:
            _triton_arg(params, arg, params.args, arg["name"])
    return params


def _triton_arg(params: Params, arg: dict, holder, key) -> None:
    kind = arg["kind"]
    if kind == "scalar":
        holder[key] = arg["value"]
    elif kind == "null":
        holder[key] = None
    elif kind == "descriptor":           # tensordesc<fp16[64, 64]>: a buffer of its shape
        dtype = arg["type"].partition("<")[2].partition("[")[0]
        extra = {"padding": "nan"} if arg.get("padding") == "nan" else {}
        params.pointer(PointerUse(arg["name"], int(arg["region"]), int(arg["at"]), dtype,
                                  [int(d) for d in arg["shape"]], extra), holder, key)
    elif kind == "tuple":
        holder[key] = [None] * len(arg["items"])
        for index, item in enumerate(arg["items"]):
            _triton_arg(params, item, holder[key], index)
    else:
        pointee = arg["type"].lstrip("*").lstrip("k")
        params.pointer(PointerUse(arg["name"], int(arg["region"]), int(arg["at"]), pointee),
                       holder, key)


def cuda_params(record: dict) -> Params:
    """From the injection library's record: parameters `a0, a1, ...` as raw bytes
    (`params`: offset, size, hex) and the pointers found in them (`pointers`:
    param, offset inside it, region, at)."""
    params = Params()
    inside: dict[int, list[dict]] = {}
    for p in record.get("pointers", []):
        inside.setdefault(int(p["param"]), []).append(p)
    for index, param in enumerate(record["params"]):
        name, base, data = f"a{index}", int(param["offset"]), bytes.fromhex(param["hex"])
        if len(data) != int(param["size"]):
            raise NotExpressible(f"parameter {index}: {len(data)} bytes for size {param['size']}")
        found = sorted(inside.get(index, []), key=lambda p: int(p["offset"]))
        if not found:
            params.signature[name], params.args[name] = _plain(data, base)
        elif len(found) == 1 and len(data) == 8:
            params.signature[name] = "*u8"
            params.pointer(PointerUse(name, int(found[0]["region"]), int(found[0]["at"])),
                           params.args, name)
        else:
            _struct(params, name, data, base, found)
    return params


def _struct(params: Params, name: str, data: bytes, base: int, found: list[dict]) -> None:
    """A parameter with pointers inside: word arrays between `*u8` members."""
    if len(data) % 8:
        raise NotExpressible(f"parameter {name} holds pointers but is {len(data)} bytes, "
                             "not a multiple of 8 (a packed struct)")
    types, values, position = [], [], 0
    for p in found:
        offset = int(p["offset"])
        if offset % 8 or offset < position or offset + 8 > len(data):
            raise NotExpressible(f"parameter {name}: a pointer at byte {offset}")
        if offset > position:
            ty, value = _words(data[position:offset], base + position)
            types.append(ty)
            values.append(value)
        types.append("*u8")
        values.append(None)
        params.pointer(PointerUse(f"{name}[{len(values) - 1}]", int(p["region"]), int(p["at"])),
                       values, len(values) - 1)
        position = offset + 8
    if position < len(data):
        ty, value = _words(data[position:], base + position)
        types.append(ty)
        values.append(value)
    params.signature[name] = f"struct[{', '.join(types)}]"
    params.args[name] = values


def _plain(data: bytes, offset: int) -> tuple[str, object]:
    """Bytes without pointers: an unsigned scalar of their size where it is aligned
    as one (a struct of two ints at offset 4 is not), else words."""
    if len(data) in (1, 2, 4, 8) and offset % len(data) == 0:
        return f"u{8 * len(data)}", int.from_bytes(data, "little")
    return _words(data, offset)


def _words(data: bytes, offset: int) -> tuple[str, object]:
    """The widest unsigned words that both the bytes' place and length allow
    (so the C layout puts them where they were); one word is a scalar."""
    width = next(w for w in (8, 4, 2, 1) if offset % w == 0 and len(data) % w == 0)
    words = [int.from_bytes(data[i:i + width], "little") for i in range(0, len(data), width)]
    if len(words) == 1:
        return f"u{8 * width}", words[0]
    return f"u{8 * width}[{len(words)}]", words
