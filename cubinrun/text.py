"""Small formatting helpers shared by the outputs, human and machine."""
from __future__ import annotations

import math
from typing import Any, Iterable


def human_bytes(n: float) -> str:
    """1536 -> "1.50 KiB"; below 1 KiB plain bytes."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError


def dims(values: Iterable) -> str:
    """(4, 1, 1) -> "4 x 1 x 1"."""
    return " x ".join(str(v) for v in values)


def finite(value: Any) -> Any:
    """`value` with NaN and infinities as None, so its JSON is valid (null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
