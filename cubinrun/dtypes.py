"""The element types of Triton's vocabulary: sizes, ranges and NumPy dtypes.

One table serves the signature parser (which names are legal), the launcher
generator (how a scalar is stored), the spec (range checks) and the buffers
(host arrays). NumPy types for bf16 and fp8 come from ml_dtypes, imported
only when such an array is made.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ElementType:
    name: str          # Triton's name: "i32", "bf16", "fp8e4nv"
    kind: str          # "bool", "int", "uint" or "float"
    size: int          # bytes in device memory and in a kernel parameter
    numpy: str         # NumPy dtype name; ml_dtypes names for bf16 / fp8
    scalar: bool       # usable as a scalar kernel parameter (fp8 is pointee-only)

    @property
    def bits(self) -> int:
        return 8 * self.size

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    def int_range(self) -> tuple[int, int]:
        """Inclusive range of an integer or boolean type."""
        if self.kind == "bool":
            return 0, 1
        if self.kind == "uint":
            return 0, (1 << self.bits) - 1
        if self.kind == "int":
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        raise TypeError(f"{self.name} is not an integer type")

    def numpy_dtype(self):
        """The host-side dtype (ml_dtypes is imported only when needed)."""
        import numpy as np
        if self.numpy.startswith(("bfloat16", "float8")):
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, self.numpy))
        return np.dtype(self.numpy)


def _t(name, kind, size, numpy, scalar=True):
    return name, ElementType(name, kind, size, numpy, scalar)


# i1 and u1 are booleans stored in one byte, as Triton's launcher passes them.
# fp8e4b15 (exponent bias 15) has no NumPy type: host arrays hold its raw bytes.
ELEMENT_TYPES: dict[str, ElementType] = dict([
    _t("i1", "bool", 1, "int8"),
    _t("i8", "int", 1, "int8"),
    _t("i16", "int", 2, "int16"),
    _t("i32", "int", 4, "int32"),
    _t("i64", "int", 8, "int64"),
    _t("u1", "bool", 1, "uint8"),
    _t("u8", "uint", 1, "uint8"),
    _t("u16", "uint", 2, "uint16"),
    _t("u32", "uint", 4, "uint32"),
    _t("u64", "uint", 8, "uint64"),
    _t("fp16", "float", 2, "float16"),
    _t("bf16", "float", 2, "bfloat16"),
    _t("fp32", "float", 4, "float32"),
    _t("fp64", "float", 8, "float64"),
    _t("fp8e4nv", "float", 1, "float8_e4m3fn", scalar=False),
    _t("fp8e5", "float", 1, "float8_e5m2", scalar=False),
    _t("fp8e4b15", "float", 1, "uint8", scalar=False),
])

SCALAR_TYPES: dict[str, ElementType] = {
    name: t for name, t in ELEMENT_TYPES.items() if t.scalar}

def element_type(name: str) -> ElementType:
    """Look up a type by name; KeyError lists nothing (callers phrase the error)."""
    return ELEMENT_TYPES[name]
