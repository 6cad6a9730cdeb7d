"""TMA descriptors (CUtensorMap) for `nvTmaDesc` and `tensordesc` arguments.

With Triton metadata (`tensordesc_meta`) the encoding follows the seed's
driver exactly: its swizzle, element size and type, block size and fp4
padding. Without it, the spec's fields and the buffer's dtype decide.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import driver
from ..errors import SpecError
from ..specfile import BufferArg, DescArg

# CUtensorMapDataType values, by cubinrun element type.
TMA_DATA_TYPE = {
    "i1": 0, "u1": 0, "i8": 0, "u8": 0, "fp8e4nv": 0, "fp8e5": 0, "fp8e4b15": 0,
    "i16": 1, "u16": 1, "u32": 2, "i32": 3, "u64": 4, "i64": 5,
    "fp16": 6, "fp32": 7, "fp64": 8, "bf16": 9,
}
# Triton's metadata numbers the element types as the device does; the host
# enum swaps three of them (the seed's TMA_DTYPE_DEVICE_TO_HOST).
DEVICE_TO_HOST_TYPE = {8: 10, 9: 8, 10: 9}
SWIZZLE_ENUM = {0: 0, 32: 1, 64: 2, 128: 3}     # bytes -> CUtensorMapSwizzle


@dataclass(frozen=True)
class TmaParams:
    data_type: int
    elem_size: int
    shape: tuple[int, ...]          # outermost first, as the buffer's shape
    block: tuple[int, ...]
    swizzle: int                    # CUtensorMapSwizzle value
    oob_nan: bool


def tma_params(desc: DescArg, buffer: BufferArg, meta: dict | None) -> TmaParams:
    shape = buffer.shape
    if meta:
        shape = tuple(shape[:-1]) + (shape[-1] * 2,) if meta.get("fp4_padded") else shape
        elem_type = int(meta["elem_type"])
        return TmaParams(DEVICE_TO_HOST_TYPE.get(elem_type, elem_type), int(meta["elem_size"]),
                         shape, tuple(meta["block_size"]), int(meta["swizzle"]),
                         desc.padding == "nan")
    swizzle = desc.swizzle if desc.swizzle is not None else 0
    return TmaParams(TMA_DATA_TYPE[buffer.dtype.name], buffer.dtype.size, shape, desc.block,
                     SWIZZLE_ENUM[swizzle], desc.padding == "nan")


@dataclass(frozen=True)
class TiledArgs:
    """cuTensorMapEncodeTiled's arguments but the address: dims and box
    innermost first, strides in bytes for dims 1.."""
    data_type: int
    dims: list[int]
    strides: list[int]
    box: list[int]
    swizzle: int
    oob_nan: bool


def tiled_args(desc: DescArg, buffer: BufferArg, meta: dict | None) -> TiledArgs:
    p = tma_params(desc, buffer, meta)
    if len(p.block) != len(p.shape):
        raise SpecError(f"block {list(p.block)} does not match the {len(p.shape)}-D buffer "
                        f"{buffer.name}", field=f"args.{desc.name}.block")
    dims = list(reversed(p.shape))
    strides, step = [], p.elem_size
    for dim in dims[:-1]:
        step *= dim
        strides.append(step)
    return TiledArgs(p.data_type, dims, strides, list(reversed(p.block)), p.swizzle, p.oob_nan)


def encode(desc: DescArg, buffer: BufferArg, address: int, meta: dict | None) -> bytes:
    """The 128-byte CUtensorMap for `buffer` at `address`."""
    a = tiled_args(desc, buffer, meta)
    return driver.encode_tiled_tensor_map(
        a.data_type, address, a.dims, a.strides, a.box, a.swizzle, a.oob_nan,
        context=f"args.{desc.name}: {len(a.dims)}-D {buffer.dtype.name} block "
                f"{list(reversed(a.box))}")
