"""A kernel's parameter types as its C++ declares them, against the spec's
signature: the sizes may agree while the types contradict (`fp32` for an
`int`, `*fp16` for a `float*`), and the launch then passes the wrong bits
without a word.

The types come from the demangled symbol of a C++ kernel or, for an
`extern "C"` kernel compiled from the spec's `source:`, from its declaration
there (`declared_in_source`, which `init` reads for the names too). Only
what is known is compared: a scalar's type, and a pointer's pointee where it
is a scalar; a `float4*`, a struct, a template parameter, a typedef or macro
not listed here is taken as the spec writes it. Two reinterpretations are
meant, not mistakes: a pointer given as bytes (`*i8`, `*u8`) fits any
pointer, and a parameter named in `kernel.reinterpret` is passed as the spec
types it whatever C++ says.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SpecError

if TYPE_CHECKING:
    from ..plan.make import Plan
    from .cubin import KernelInfo

# C++ scalar types as names.py spells them -> the spec's element type.
CXX_SCALARS = {
    "bool": "u1", "char": "i8", "signed char": "i8", "unsigned char": "u8", "short": "i16",
    "unsigned short": "u16", "int": "i32", "unsigned int": "u32", "long": "i64",
    "unsigned long": "u64", "long long": "i64", "unsigned long long": "u64", "float": "fp32",
    "double": "fp64", "__half": "fp16", "half": "fp16", "__nv_bfloat16": "bf16",
    "int8_t": "i8", "uint8_t": "u8", "int16_t": "i16", "uint16_t": "u16", "int32_t": "i32",
    "uint32_t": "u32", "int64_t": "i64", "uint64_t": "u64", "size_t": "u64",
}
# What else a C++ type may be given as without contradicting it: the same bits, or
# (long) the size the host compiler gives it, 4 bytes on Windows, which validate.py
# compares with the binary's.
_ALSO = {"bool": {"i1"}, "char": {"u8"}, "long": {"i32"}, "unsigned long": {"u32"}}
BYTES = ("i8", "u8")                # a pointer to bytes fits any pointer


def spec_type(written: str) -> str | None:
    """The spec's type for a C++ parameter type (`float const*` -> `*kfp32`) when it
    is a known scalar or a pointer to one; None otherwise."""
    if written.endswith("*"):
        pointee = written[:-1]
        element = CXX_SCALARS.get(pointee.removesuffix(" const"))
        return f"*{'k' if pointee.endswith(' const') else ''}{element}" if element else None
    return CXX_SCALARS.get(written)


def check_declared_types(plan: "Plan", kernel: "KernelInfo") -> None:
    """SpecError naming the first parameter whose spec type contradicts its C++ type."""
    kernel_ref = plan.spec.kernel
    names = set(plan.spec.signature.names())
    for listed in kernel_ref.reinterpret:
        if listed not in names:
            raise SpecError(f"{listed!r} is not a parameter of the signature "
                            f"({', '.join(sorted(names)) or 'none'})", field="kernel.reinterpret")
    declared = _declared(kernel, kernel_ref)
    if declared is None or len(declared) != len(kernel.params):
        return
    for index, (slot, cxx) in enumerate(zip(plan.slots, declared)):
        name, given = slot.leaf.path, slot.leaf.type
        if name in kernel_ref.reinterpret or _agrees(given, cxx):
            continue
        meant = spec_type(cxx) or '"*T", a pointer'
        bytes_hint = " (or *u8 for its bytes)" if cxx.endswith("*") else ""
        raise SpecError(f"{given} contradicts parameter {index} of {kernel.cxx_name}, which "
                        f"C++ declares `{cxx}`: write {meant}{bytes_hint}, or list {name} in "
                        f"kernel.reinterpret if {given} is meant", field=f"signature.{name}")


def _agrees(given: str, cxx: str) -> bool:
    """`given` (a spec type) does not contradict `cxx`; what is not known never does."""
    from ..dtypes import SCALAR_TYPES
    if not (given.startswith("*") or given in SCALAR_TYPES):
        return True                     # a struct or a descriptor: C++ names a class
    pointer = cxx.endswith("*")
    base = cxx[:-1].removesuffix(" const") if pointer else cxx
    if not pointer and base not in CXX_SCALARS:
        return True                     # a struct, or a typedef or macro not known here
    if pointer != given.startswith("*"):
        return False
    accepted = {CXX_SCALARS[base], *_ALSO.get(base, ())} if base in CXX_SCALARS else None
    if not pointer:
        return given in accepted
    pointee = given[1:].removeprefix("k")
    # bytes fit any pointer; a void*, float4* or struct pointer says no element type
    return accepted is None or pointee in BYTES or pointee in accepted


def _declared(kernel: "KernelInfo", kernel_ref) -> list[str] | None:
    from .names import param_types
    if kernel.demangled:
        return param_types(kernel)
    if kernel_ref.kind != "source":
        return None
    found = declared_in_source(kernel_ref.path, kernel.name)
    return None if found is None else [cxx for cxx, _ in found]


def declared_in_source(path: Path, symbol: str,
                       types: list[str] | None = None) -> list[tuple[str, str | None]] | None:
    """The (C++ type, name) of each parameter of the `__global__` function `symbol`
    as `path` declares it, the overload of these `types` when they are given; None
    when it is not declared there exactly one way."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    found = _declarations(str(path), stat.st_mtime_ns, stat.st_size, symbol)
    if found is None:
        return None
    if types is not None:
        found = {params for params in found if [cxx for cxx, _ in params] == types}
    if len({tuple(cxx for cxx, _ in params) for params in found}) != 1:
        return None
    # a prototype may leave names out that the definition gives
    return list(max(found, key=lambda params: sum(name is not None for _, name in params)))


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DECLARATION_START = re.compile(r"[;{}]|^\s*#[^\n]*", re.M)


@functools.lru_cache(maxsize=64)        # a sweep's points validate against one source
def _declarations(path: str, _mtime: int, _size: int, symbol: str) -> set[tuple] | None:
    from .names import declared_params
    try:
        text = _COMMENT.sub(" ", Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    found = set()
    for match in re.finditer(rf"\b{re.escape(symbol)}\s*\(", text):
        starts = [m.end() for m in _DECLARATION_START.finditer(text, 0, match.start())]
        head = text[starts[-1] if starts else 0:match.start()]
        if not re.search(r"\b__global__\b", head):
            continue                            # a call, or a host function of that name
        close = _closing(text, match.end() - 1)
        params = declared_params(text[match.end():close]) if close is not None else None
        if params is None:
            return None
        found.add(tuple(params))
    return found


def _closing(text: str, opening: int) -> int | None:
    depth = 0
    for index in range(opening, min(len(text), opening + 20_000)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return None
