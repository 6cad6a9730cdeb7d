"""The reference's side of a check, as arrays: the boxes a check compares
(runs of flat indices that are boxes of the array, so an input that
broadcasts is sliced, not expanded), the inputs as a reference reads them
(upcast to float64, int64 or uint64), and an expression's value as an array.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..dtypes import ElementType
from ..errors import SpecError
from .values import to_float64


Box = tuple  # (flat start, flat stop, index): a run of flat indices that is a box of the array


def boxes(shape: tuple[int, ...], size: int) -> list[Box]:
    """Boxes of about `size` elements (at least one row of the innermost axes that
    fit) covering an array of `shape` in flat order."""
    n = math.prod(shape)
    if n == 0:
        return []
    if not shape:
        return [(0, 1, (Ellipsis,))]
    axis, inner = len(shape) - 1, 1
    while axis > 0 and inner * shape[axis] <= size:
        inner *= shape[axis]
        axis -= 1
    step = max(1, size // inner)
    rest = (slice(None),) * (len(shape) - axis - 1)
    out = []
    for prefix in np.ndindex(*shape[:axis]):
        base = int(np.ravel_multi_index(prefix, shape[:axis])) * shape[axis] if axis else 0
        head = tuple(slice(p, p + 1) for p in prefix)
        for j in range(0, shape[axis], step):
            m = min(step, shape[axis] - j)
            out.append(((base + j) * inner, (base + j + m) * inner,
                        head + (slice(j, j + m),) + rest))
    return out


def box_shape(index: tuple, shape: tuple[int, ...]) -> tuple[int, ...]:
    if index == (Ellipsis,):
        return shape
    return tuple(n if s.start is None else s.stop - s.start for s, n in zip(index, shape))


def box_origin(index: tuple, shape: tuple[int, ...]) -> tuple[int, ...]:
    if index == (Ellipsis,):
        return (0,) * len(shape)
    return tuple(s.start or 0 for s in index)


def evaluate(expect, env: Mapping[str, Any], field: str) -> np.ndarray:
    try:
        reference = np.asarray(expect.evaluate(env))
    except SpecError as exc:
        raise exc.located(field=field) from None
    if reference.dtype.kind not in "biuf":
        raise SpecError(f"{expect.source!r} gives {reference.dtype} values, not numbers",
                        field=field)
    return reference


class ArrayInput:
    """A plain array as an input (what hostdata.InputValues gives from its values)."""

    def __init__(self, array: np.ndarray, dtype: ElementType | None):
        self.array, self.dtype = np.asarray(array), dtype
        self.shape, self.count = self.array.shape, self.array.size
        self._flat = np.ascontiguousarray(self.array).reshape(-1)

    def values(self, start: int, stop: int) -> np.ndarray:
        return self._flat[start:stop]

    def whole(self) -> np.ndarray:
        return self.array


def as_input(source: Any, dtype: ElementType | None):
    return ArrayInput(source, dtype) if isinstance(source, np.ndarray) else source


def upcast(array: np.ndarray, dtype: ElementType | None) -> np.ndarray:
    """An input as the reference reads it: float64, int64, or uint64 for u64."""
    if dtype is not None and dtype.kind == "float":
        return to_float64(array, dtype)
    kind = array.dtype.kind
    if kind == "u" and array.dtype.itemsize == 8:
        return array
    if kind in "biu":
        return array.astype(np.int64)
    return array.astype(np.float64)          # float and ml_dtypes arrays


def must_broadcast(source: str, result: tuple[int, ...], shape: tuple[int, ...], what: str,
                    field: str) -> None:
    """SpecError unless a reference of shape `result` broadcasts to exactly `shape`."""
    try:
        target = np.broadcast_shapes(result, shape)
    except ValueError:
        target = None
    if target != shape:
        raise SpecError(f"{source} has shape {list(result)}, which does not broadcast to the "
                        f"{what}'s {list(shape)}", field=field)
