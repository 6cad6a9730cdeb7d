"""The C source of a launcher for one expanded signature.

template.c is the whole launcher; this module fills its `{{NAME}}` slots with
the module name, the constants and one line of C per kernel parameter: a
declaration of its storage (and of its last converted value, see CONVERT in
template.c), a call to the converter for its kind, and its place in the
parameter array handed to cuLaunchKernelEx. A struct, array or vector passed
by value is an aligned byte array of its size, filled by `to_blob` from the
bytes Python packed (plan/packing.py), so one converter serves every struct.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from ..dtypes import ELEMENT_TYPES

# Bump when launch()/launch_n()/Config change how they are called; it is
# exported as the module's ABI and is part of every module name.
LAUNCHER_ABI = 1

_TEMPLATE = Path(__file__).with_name("template.c")
_SLOT = re.compile(r"\{\{([A-Z_]+)\}\}")
_POINTER_TYPE = re.compile(r"\*k?([a-z0-9]+)")

# Leaf type -> (C storage type, converter in template.c).
_SCALARS: dict[str, tuple[str, str]] = {
    "i1": ("int8_t", "to_i1"),
    "i8": ("int8_t", "to_i8"),
    "i16": ("int16_t", "to_i16"),
    "i32": ("int32_t", "to_i32"),
    "i64": ("int64_t", "to_i64"),
    "u1": ("uint8_t", "to_u1"),
    "u8": ("uint8_t", "to_u8"),
    "u16": ("uint16_t", "to_u16"),
    "u32": ("uint32_t", "to_u32"),
    "u64": ("uint64_t", "to_u64"),
    "fp16": ("uint16_t", "to_fp16"),
    "bf16": ("uint16_t", "to_bf16"),
    "fp32": ("float", "to_fp32"),
    "fp64": ("double", "to_fp64"),
}
_POINTER = ("CUdeviceptr", "to_ptr")
_TMA_DESC = ("TensorMap", "to_tma_desc")   # template.c: CUtensorMap, aligned for every compiler
_BLOB = "to_blob"          # a struct, array or vector: its bytes, packed in Python
_SCRATCH = ("&c->global_scratch", "&c->profile_scratch")


@lru_cache(maxsize=1)
def _template() -> str:
    return _TEMPLATE.read_text()


def _storage(leaf_type: str) -> tuple[str, str]:
    """C type and converter for one leaf; ValueError for anything unknown."""
    if leaf_type in _SCALARS:
        return _SCALARS[leaf_type]
    if leaf_type == "nvTmaDesc":
        return _TMA_DESC
    pointer = _POINTER_TYPE.fullmatch(leaf_type)
    if pointer and pointer.group(1) in ELEMENT_TYPES:
        return _POINTER
    if (blob := _by_value(leaf_type)) is not None:
        return f"ALIGNED({blob[1]}) unsigned char", _BLOB
    raise ValueError(f"unknown launcher parameter type {leaf_type!r}; expected one of "
                     f"{', '.join(_SCALARS)}, *T, *kT, nvTmaDesc or a struct, array or vector")


def _by_value(leaf_type: str) -> tuple[int, int] | None:
    """(size, alignment) of a struct, array or vector type, else None."""
    from ..signature.aggregates import aggregate_of, size_align
    from ..errors import SpecError
    try:
        aggregate = aggregate_of(leaf_type)
    except SpecError:
        return None
    return size_align(aggregate) if aggregate is not None else None


def _check(leaf_types: Sequence[str], num_scratch: int) -> None:
    for leaf_type in leaf_types:
        _storage(leaf_type)
    if num_scratch not in (0, 1, 2):
        raise ValueError(f"num_scratch must be 0, 1 or 2, got {num_scratch!r}")


def module_name_for(leaf_types: Sequence[str], num_scratch: int = 0) -> str:
    """A module name unique to what shapes the source: template, ABI, signature, scratch."""
    _check(leaf_types, num_scratch)
    digest = hashlib.sha256("\n".join(
        [_template(), str(LAUNCHER_ABI), str(num_scratch), *leaf_types]).encode())
    return "cubinrun_launcher_" + digest.hexdigest()[:16]


def generate_source(leaf_types: Sequence[str], num_scratch: int = 0,
                    module_name: str | None = None) -> str:
    """The launcher's C source for an expanded signature (see signature.expand)."""
    _check(leaf_types, num_scratch)
    if module_name is None:
        module_name = module_name_for(leaf_types, num_scratch)
    elif not module_name.isidentifier() or not module_name.isascii():
        raise ValueError(f"module name {module_name!r} is not a C identifier")

    decls, conversions, pointers = [], [], []
    for k, leaf_type in enumerate(leaf_types):
        c_type, converter = _storage(leaf_type)
        address = f"&p{k}"
        if converter == _TMA_DESC[1]:        # a buffer may change between calls: always read
            decls.append(f"  unsigned char p{k}_space[TENSOR_MAP_SPACE]; "
                         f"{c_type} *p{k} = aligned_tensor_map(p{k}_space); /* {leaf_type} */")
            conversions.append(
                f"  if ({converter}(kernel_args[{k}], {k}, p{k}) < 0) return NULL;")
            address = f"p{k}"
        elif converter == _BLOB:
            size = _by_value(leaf_type)[0]
            decls.append(f"  {c_type} p{k}[{size}]; /* {leaf_type} */")
            conversions.append(
                f"  if ({converter}(kernel_args[{k}], {k}, p{k}, {size}) < 0) return NULL;")
        else:
            decls.append(f"  {c_type} p{k}; static {c_type} last_p{k}; /* {leaf_type} */")
            conversions.append(f"  CONVERT({k}, {converter}, p{k});")
        pointers.append(f"      {address},")
    pointers += [f"      {scratch}," for scratch in _SCRATCH[:num_scratch]]
    if not pointers:
        pointers.append("      NULL, /* no parameters */")

    slots = {
        "MODULE_NAME": module_name,
        "ABI": str(LAUNCHER_ABI),
        "NUM_PARAMS": str(len(leaf_types)),
        "NUM_SCRATCH": str(num_scratch),
        "SIGNATURE_TEXT": ", ".join(leaf_types) or "no parameters",
        "LEAF_TYPE_NAMES": "".join(f'"{t}", ' for t in leaf_types),
        "ARG_DECLS": "\n".join(decls),
        "ARG_CONVERSIONS": "\n".join(conversions),
        "PARAM_POINTERS": "\n".join(pointers),
    }
    return _SLOT.sub(lambda m: slots[m.group(1)], _template())
