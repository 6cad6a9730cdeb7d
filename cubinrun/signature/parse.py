"""A spec's signature, from YAML (a mapping of names to types) or from the
compact form (`"*fp32,*fp32,i32"`), with bounds checked before recursion."""
from __future__ import annotations

import re

from ..dtypes import ELEMENT_TYPES, SCALAR_TYPES
from ..errors import SpecError, excerpt
from ..limits import MAX_SIGNATURE_CHARS, MAX_TYPE_CHARS, MAX_TYPE_DEPTH
from .types import (ConstexprType, ParamType, Signature, TensorDescType, TmaDescType, TupleType,
                    parse_scalar_or_pointer, split_top_level)

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
    if (simple := parse_scalar_or_pointer(text, field)) is not None:
        return simple
    if text == "constexpr":
        return ConstexprType()
    if text == "nvTmaDesc":
        return TmaDescType()
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
    from .aggregates import parse_aggregate     # only now: a plain spec never needs it
    if (aggregate := parse_aggregate(text, field)) is not None:
        return aggregate
    hint = suggestion(text)
    raise SpecError(f"unknown type {excerpt(value)}"
                    + (f" (did you mean {hint}?)" if hint else "")
                    + f"; expected one of {', '.join(SCALAR_TYPES)}, "
                    "*T, *kT, constexpr, nvTmaDesc, tensordesc<T[dims]>, struct[T, ...], "
                    "T[n], TxN or a list", field=field)


# C and C++ spellings people write for cubinrun's (Triton's) type names.
C_NAMES = {
    "float": "fp32", "double": "fp64", "half": "fp16", "__half": "fp16",
    "bfloat16": "bf16", "__nv_bfloat16": "bf16", "bool": "i1", "char": "i8",
    "short": "i16", "int": "i32", "long": "i64", "long long": "i64", "unsigned": "u32",
    "unsigned int": "u32", "size_t": "u64", "float32": "fp32", "float16": "fp16",
    "float64": "fp64", "f32": "fp32", "f16": "fp16", "f64": "fp64",
    **{f"{sign}int{bits}_t": f"{sign[:1] or 'i'}{bits}" for sign in ("", "u")
       for bits in (8, 16, 32, 64)},
}


def suggestion(text: str) -> str | None:
    """What an unknown type most likely meant: its cubinrun name for a C name
    (`float*` is `*fp32`), else the closest known type (difflib)."""
    import difflib
    const, pointer, base = "", "", text.strip()
    if base.endswith("*"):
        pointer, base = "*", base[:-1].strip()
        if base.startswith("const "):
            const, base = "k", base[len("const "):].strip()
    elif base.startswith("*"):
        pointer, base = "*", base[1:]
        if base.startswith("k") and base not in C_NAMES:
            const, base = "k", base[1:]
    name = C_NAMES.get(base) or next(iter(difflib.get_close_matches(
        base, [*SCALAR_TYPES, *ELEMENT_TYPES, "constexpr", "nvTmaDesc"], n=1, cutoff=0.6)),
        None)
    return f'"{pointer}{const}{name}"' if name and (pointer or name != base) else None


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


def parse_compact(text: str, field: str = "signature", as_tuple: bool = False):
    """The compact form `"*fp32,*fp32,i32"`; `(a,b)` is a tuple; `""` is no parameters.

    Returns a Signature with names arg0, arg1, ... (or a TupleType for the
    inside of parentheses).
    """
    if not as_tuple:
        check_type_bounds(text, field, MAX_SIGNATURE_CHARS)
    if not text.strip() and not as_tuple:
        return Signature(())                    # `--signature ""`: no parameters
    parts = split_top_level(text)
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
