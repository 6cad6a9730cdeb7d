"""The whole-array operations of `check.expect` (specfile/expr.py): `A @ B`,
the reductions, `cumsum`, `transpose`, `reshape`, `roll`, `astype` and
indexing, each on a NumPy array or on a `Shaped` one, an array known only by
its shape.

Each applies NumPy's shape rule first, so that an error names the shapes, and
then NumPy itself, or gives only the result's shape: `Expr.plan` works out a
reference's shape and memory from the inputs' shapes alone, with the same
rules, so a dry run finds a shape error without data. NumPy is imported only
when real arrays are computed.
"""
from __future__ import annotations

import math
from typing import Any


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting rule (numpy.broadcast_shapes) without importing NumPy:
    from the last dimension, sizes must be equal or 1. ValueError otherwise."""
    out: list[int] = []
    for i in range(1, max(map(len, shapes), default=0) + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i and s[-i] != 1}
        if len(sizes) > 1:
            raise ValueError(f"shapes {', '.join(map(str, shapes))} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))


class Shaped:
    """An array known only by its shape (Expr.plan)."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape


def shape_of(value: Any) -> tuple[int, ...]:
    return tuple(getattr(value, "shape", ()))


def is_array(value: Any) -> bool:
    return isinstance(value, Shaped) or (hasattr(value, "shape") and hasattr(value, "dtype")
                                         and value.shape != ())


def matmul(a, b):
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ValueError(f"@ needs arrays on both sides, got shapes {list(sa)} and {list(sb)}")
    left = (1,) + sa if len(sa) == 1 else sa
    right = sb + (1,) if len(sb) == 1 else sb
    if left[-1] != right[-2]:
        raise ValueError(f"shapes {list(sa)} @ {list(sb)}: inner sizes {left[-1]} and "
                         f"{right[-2]} differ")
    try:
        batch = broadcast_shapes(left[:-2], right[:-2])
    except ValueError:
        raise ValueError(f"shapes {list(sa)} @ {list(sb)}: batch dimensions do not "
                         "broadcast") from None
    shape = batch + (left[-2],) * (len(sa) > 1) + (right[-1],) * (len(sb) > 1)
    if isinstance(a, Shaped) or isinstance(b, Shaped):
        return Shaped(shape)
    import numpy as np
    return np.matmul(a, b)


def _axis(axis: int, shape: tuple[int, ...], what: str) -> int:
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis={axis} is out of range for {what} of shape {list(shape)}")
    return axis % len(shape)


def reduce_array(name: str, x, axis: int | None):
    shape = shape_of(x)
    if axis is None:
        out: tuple[int, ...] = ()
    else:
        k = _axis(axis, shape, f"{name}()")
        out = shape[:k] + shape[k + 1:]
    if name in ("max", "min") and 0 in shape:
        raise ValueError(f"{name}() of an empty array (shape {list(shape)})")
    if isinstance(x, Shaped):
        return Shaped(out)
    import numpy as np
    return getattr(np, {"max": "amax", "min": "amin"}.get(name, name))(x, axis=axis)


def cumsum(x, axis: int | None):
    shape = shape_of(x)
    if axis is not None:
        _axis(axis, shape, "cumsum()")
    if isinstance(x, Shaped):
        return Shaped((math.prod(shape),) if axis is None else shape)
    import numpy as np
    return np.cumsum(x, axis=axis)


def transpose(x):
    if isinstance(x, Shaped):
        return Shaped(tuple(reversed(x.shape)))
    import numpy as np
    return np.transpose(x)


def reshape(x, dims: list[int]):
    shape, n = shape_of(x), math.prod(shape_of(x))
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise ValueError(f"reshape to {dims}: dimensions are sizes >= 0, and one -1 at most")
    known = math.prod(d for d in dims if d != -1)
    if -1 in dims:
        if known == 0 or n % known:
            raise ValueError(f"cannot reshape shape {list(shape)} ({n} elements) into {dims}")
        dims = [n // known if d == -1 else d for d in dims]
    elif known != n:
        raise ValueError(f"cannot reshape shape {list(shape)} ({n} elements) into {dims} "
                         f"({known} elements)")
    if isinstance(x, Shaped):
        return Shaped(tuple(dims))
    import numpy as np
    return np.reshape(x, dims)


def roll(x, shift: int, axis: int | None):
    if axis is not None:
        _axis(axis, shape_of(x), "roll()")
    if isinstance(x, Shaped):
        return x
    import numpy as np
    return np.roll(x, shift, axis=axis)


def astype(x, dtype):
    """Round (or wrap) to `dtype`'s values; the result is float64 (int64, or
    uint64 for u64) so that later arithmetic stays exact, and a bf16 or fp8 array
    is never NumPy's opaque type."""
    if dtype.name == "fp8e4b15":
        raise ValueError("astype() to fp8e4b15 is not supported (NumPy has no such type)")
    if isinstance(x, Shaped):
        return x
    import warnings

    import numpy as np
    with warnings.catch_warnings():         # out of range is the user's data: no warning
        warnings.simplefilter("ignore", RuntimeWarning)
        rounded = np.asarray(x).astype(dtype.numpy_dtype())
    wide = np.float64 if dtype.kind == "float" else np.uint64 if dtype.name == "u64" else np.int64
    return rounded.astype(wide)


def index(x, parts: list):
    shape = shape_of(x)
    if len(parts) > len(shape):
        raise ValueError(f"{len(parts)} indices for shape {list(shape)}")
    out: list[int] = []
    for part, n in zip(parts, shape):
        if isinstance(part, slice):
            out.append(len(range(n)[part]))
        elif not -n <= part < n:
            raise ValueError(f"index {part} is out of range for size {n} in shape {list(shape)}")
    out.extend(shape[len(parts):])
    if isinstance(x, Shaped):
        return Shaped(tuple(out))
    return x[tuple(parts)]
