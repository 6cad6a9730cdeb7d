"""Check a Triton entry's arguments against what Triton specialized it for.

Triton's JIT compiles an integer argument that is a multiple of 16, and a
pointer aligned to 16 bytes, with `tt.divisibility = 16` (specfile/triton_args.py),
and the code relies on it: a value that breaks it gives misaligned accesses
or wrong results, not an error. So a spec that breaks it is refused (exit
2) with the argument, its value, what the entry was compiled for and the fix:

- `check_plan`, in every dry run and before every launch: scalar values, and
  pointers as far as they are known without a GPU (a buffer starts at a
  256-byte aligned allocation, plus the spec's `offset:`);
- `check_addresses`, once the buffers are allocated: the device addresses
  the launch will really pass.
"""
from __future__ import annotations

import re

from ..errors import SpecError
from .make import Plan

ALLOCATION_ALIGNMENT = 256      # cuMemAlloc's guarantee (buffers.CU_MEM_ALLOC_ALIGNMENT)
_POINTER_SLOTS = ("buffer", "desc_base")


def check_plan(plan: Plan) -> None:
    spec = plan.spec
    if spec.divisibility is None:
        return
    for slot, divisibility in zip(plan.slots, spec.divisibility):
        if not divisibility:
            continue
        if slot.kind == "scalar" and isinstance(slot.value, int) and slot.value % divisibility:
            raise _error(plan, slot.leaf.path,
                         f"{slot.value} is not a multiple of {divisibility}, but the Triton entry "
                         f"was compiled for {slot.leaf.path} % {divisibility} == 0 "
                         f"(tt.divisibility = {divisibility}): pass a multiple of "
                         f"{divisibility}, or recompile the kernel for this value "
                         f"(do_not_specialize=['{_param(slot.leaf.path)}'] keeps Triton from "
                         "assuming it)")
        elif slot.kind in _POINTER_SLOTS:
            buffer = spec.buffers[slot.name if slot.kind == "buffer" else slot.desc.buffer]
            if slot.at % divisibility:          # {into, at}: a place inside another's buffer
                raise _pointer_error(plan, slot.leaf.path, divisibility,
                                     f"at: {slot.at} puts it {slot.at % divisibility} bytes past "
                                     f"a multiple of {divisibility} in {slot.name}")
            if buffer.offset_bytes % min(divisibility, ALLOCATION_ALIGNMENT):
                raise _pointer_error(plan, slot.leaf.path, divisibility,
                                     f"offset: {buffer.offset} puts it {buffer.offset_bytes} bytes "
                                     f"({buffer.offset} x {buffer.dtype.size}) past an aligned "
                                     "allocation")


def check_addresses(plan: Plan, values: list) -> None:
    """`values` are the launcher's arguments, one per slot (arguments.launcher_values)."""
    spec = plan.spec
    if spec.divisibility is None:
        return
    for slot, divisibility, value in zip(plan.slots, spec.divisibility, values):
        if divisibility and slot.kind in _POINTER_SLOTS and value % divisibility:
            raise _pointer_error(plan, slot.leaf.path, divisibility,
                                 f"its device address {value:#x} is {value % divisibility} bytes "
                                 f"past a multiple of {divisibility}")


def _pointer_error(plan: Plan, path: str, divisibility: int, what: str) -> SpecError:
    return _error(plan, path, f"{what}, but the Triton entry was compiled for {path} "
                              f"{divisibility}-byte aligned (tt.divisibility = {divisibility}): "
                              f"make the offset a multiple of {divisibility} bytes, or recompile "
                              f"the kernel for this pointer (do_not_specialize_on_alignment="
                              f"['{_param(path)}'] keeps Triton from assuming it)")


def _param(path: str) -> str:
    """The parameter a leaf belongs to: `ptrs` for `ptrs[0]`, `d` for `d.shape[1]`."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _error(plan: Plan, path: str, message: str) -> SpecError:
    return SpecError(message, field=f"args.{path}", file=str(plan.spec.path),
                     line=plan.spec.arg_lines.get(_param(path)))
