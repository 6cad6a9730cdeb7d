"""Small formatting helpers shared by the human-readable outputs."""
from __future__ import annotations

from typing import Iterable


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
