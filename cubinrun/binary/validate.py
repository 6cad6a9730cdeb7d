"""Check a plan against what the binary holds, before anything is launched.

A launcher whose parameters disagree with the kernel's corrupts memory
silently, so every mismatch the cubin can reveal is refused here with one
line naming the parameter or field: the parameter count and each size (the
trailing scratch pointers included), each type against its C++ declaration
where that is known (declared_types.py), a struct's alignment against its offset,
the arch against the device, the block against the kernel's bounds, the
cluster against a compiled-in one and the dynamic shared memory against what
the target arch allows a block (the driver's own figure replaces the table
once a device is open, gpu/kernel.py).
"""
from __future__ import annotations

from ..dtypes import SCALAR_TYPES
from ..errors import LaunchLimitError, SpecError
from ..limits import (REGISTER_ALLOCATION_UNIT, REGISTERS_PER_BLOCK,
                      REGISTERS_PER_BLOCK_BY_SM, SHARED_OPTIN_BY_SM)
from ..plan.make import Plan
from ..signature import leaf_size
from .cubin import CubinInfo, KernelInfo
from .declared_types import check_declared_types

SCRATCH_NAMES = ("global_scratch", "profile_scratch")


def expected_params(plan: Plan) -> list[tuple[str, str, int]]:
    """(name, type, size) of every parameter the launcher will pass."""
    params = [(s.leaf.path, s.leaf.type, leaf_size(s.leaf.type)) for s in plan.slots]
    params += [(name, "*u8", 8) for name in SCRATCH_NAMES[:plan.num_scratch]]
    return params


def check_params(plan: Plan, kernel: KernelInfo) -> None:
    expected = expected_params(plan)
    actual = kernel.params
    if not actual and kernel.param_bytes:
        _check_param_bytes(expected, kernel)
        return
    if len(expected) != len(actual):
        extra = len(actual) - len(expected)
        hint = ""
        if 0 < extra <= 2 and all(p.size == 8 for p in actual[len(expected):]):
            hint = (f"; if they are Triton's scratch pointers, set launch.scratch_params: "
                    f"{plan.num_scratch + extra}")
        scratch = f" (with {plan.num_scratch} scratch pointers)" if plan.num_scratch else ""
        raise SpecError(f"the signature expands to {len(expected)} parameters{scratch} but "
                        f"{kernel.cxx_name} takes {len(actual)}{hint}", field="signature")
    for index, ((name, type_, size), param) in enumerate(zip(expected, actual)):
        field = name if name in SCRATCH_NAMES else f"signature.{name}"
        if not (type_ in SCALAR_TYPES or type_.startswith("*") or type_ == "nvTmaDesc"):
            _check_aggregate(type_, index, param, kernel, field)
        elif size != param.size:
            raise SpecError(f"{type_} is {size} bytes but parameter {index} of {kernel.cxx_name} "
                            f"is {param.size} bytes", field=field)


def _check_param_bytes(expected: list[tuple[str, str, int]], kernel: KernelInfo) -> None:
    """A cubin that states the parameters' bytes but lists no parameter (its
    per-parameter records stripped, as some library cubins are): the C layout
    of the signature must end where the kernel's parameters do."""
    end = 0
    for _, type_, size in expected:
        align = _alignment(type_, size)
        end = -(-end // align) * align + size
    if end != kernel.param_bytes:
        raise SpecError(f"the signature's parameters take {end} bytes but {kernel.cxx_name}'s "
                        f"take {kernel.param_bytes} (the cubin lists no single parameter)",
                        field="signature")


def _alignment(leaf_type: str, size: int) -> int:
    if leaf_type in SCALAR_TYPES or leaf_type.startswith("*"):
        return size
    if leaf_type == "nvTmaDesc":
        return 64
    from ..signature.aggregates import aggregate_of, size_align
    return size_align(aggregate_of(leaf_type))[1]


def _check_aggregate(leaf_type: str, index: int, param, kernel: KernelInfo, field: str) -> None:
    """A struct, array or vector: its C size, and its alignment against the offset
    (aggregates.py is imported only for specs that have one)."""
    from ..signature.aggregates import aggregate_of, offsets, shortened, size_align
    size, align = size_align(aggregate_of(leaf_type))
    if size != param.size:
        starts = offsets(aggregate_of(leaf_type))
        shown = ", ".join(map(str, starts[:8])) + (", ..." if len(starts) > 8 else "")
        raise SpecError(f"{shortened(leaf_type)} is {size} bytes (by C rules its members start "
                        f"at bytes {shown}) but parameter {index} of {kernel.cxx_name} is "
                        f"{param.size} bytes", field=field)
    if param.offset % align:
        raise SpecError(f"{shortened(leaf_type)} is aligned to {align} bytes but {kernel.cxx_name} "
                        f"has parameter {index} at offset {param.offset}: a member's type is "
                        "wrong, or the struct is packed", field=field)


def arch_runs_on(cubin_sm: int, variant: str, device_sm: int) -> bool:
    """SASS runs on the same major version at an equal or newer minor; an
    arch-specific ("a") cubin only on its exact arch."""
    if variant == "a":
        return cubin_sm == device_sm
    return cubin_sm // 10 == device_sm // 10 and cubin_sm <= device_sm


def check_arch(info: CubinInfo, device_arch: str, device_name: str, field: str) -> None:
    device_sm = int(device_arch.removeprefix("sm_"))
    if not arch_runs_on(info.sm, info.variant, device_sm):
        raise SpecError(f"the cubin is for {info.arch}, which cannot run on {device_name} "
                        f"({device_arch})", field=field)


def check_block(plan: Plan, kernel: KernelInfo) -> None:
    block = plan.spec.block
    if kernel.required_block and tuple(kernel.required_block) != tuple(block):
        raise SpecError(f"{kernel.cxx_name} requires block {list(kernel.required_block)}, "
                        f"not {list(block)}", field="block")
    if kernel.max_threads:
        limit = kernel.max_threads[0] * kernel.max_threads[1] * kernel.max_threads[2]
        threads = block[0] * block[1] * block[2]
        if threads > limit:
            raise LaunchLimitError(f"{threads} threads per block exceed {kernel.cxx_name}'s "
                                   f"__launch_bounds__ of {limit}", field="block")


def check_cluster(plan: Plan, kernel: KernelInfo) -> None:
    compiled = tuple(kernel.cluster) if kernel.cluster else None
    if compiled is None or compiled == (1, 1, 1):
        return
    asked = plan.cluster
    if asked is not None and tuple(asked) != compiled:
        field = "launch.cluster" if plan.spec.launch.cluster else "launch.num_ctas"
        raise SpecError(f"{kernel.cxx_name} is compiled for clusters of {list(compiled)}; "
                        f"a launch with {list(asked)} fails", field=field)
    for axis, (g, c) in enumerate(zip(plan.spec.launched_grid, compiled)):
        if g % c:
            raise SpecError(f"{g} is not a multiple of {kernel.cxx_name}'s compiled cluster "
                            f"size {c} in {'xyz'[axis]}", field=f"grid[{axis}]")


def check_shared(plan: Plan, kernel: KernelInfo, sm: int, arch: str) -> None:
    limit = SHARED_OPTIN_BY_SM.get(sm)
    shared = plan.spec.launch.shared
    if limit is not None and shared + kernel.shared_static > limit:
        raise LaunchLimitError(f"{shared} bytes of dynamic shared memory exceed what {arch} "
                               f"allows a block: {limit} bytes, less {kernel.shared_static} "
                               f"static in {kernel.cxx_name}", field="launch.shared")


def check_registers(plan: Plan, kernel: KernelInfo, sm: int) -> None:
    """The block's registers against the block's register file, as the driver
    counts them (each warp's registers in units of 256): a kernel's register use
    lowers the threads a block may have, which a sweep over block sizes meets
    as a launch that fails for lack of resources; found here, without a GPU."""
    if not kernel.registers:
        return
    block = plan.spec.block
    threads = block[0] * block[1] * block[2]
    per_warp = -(-kernel.registers * 32 // REGISTER_ALLOCATION_UNIT) * REGISTER_ALLOCATION_UNIT
    need = -(-threads // 32) * per_warp
    limit = REGISTERS_PER_BLOCK_BY_SM.get(sm, REGISTERS_PER_BLOCK)
    if need > limit:
        most = limit // per_warp * 32
        raise LaunchLimitError(f"{threads} threads per block exceed the {most} that "
                               f"{kernel.cxx_name}'s {kernel.registers} registers per thread allow "
                               f"({limit} per block)", field="block")


def validate(plan: Plan, info: CubinInfo, kernel: KernelInfo,
             device_arch: str | None = None, device_name: str = "this device") -> None:
    """`device_arch`: the device's arch, or the `--arch` a dry run targets."""
    check_params(plan, kernel)
    check_declared_types(plan, kernel)
    if device_arch:
        check_arch(info, device_arch, device_name, f"kernel.{plan.spec.kernel.kind}")
    check_block(plan, kernel)
    check_cluster(plan, kernel)
    arch = device_arch or info.arch
    check_shared(plan, kernel, _sm_of(arch), arch)
    check_registers(plan, kernel, _sm_of(arch))


def _sm_of(arch: str) -> int:
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return int(digits) if digits else 0
