"""Small formatting helpers shared by the outputs, human and machine."""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence


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


def plain_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Columns aligned with two spaces, no styling: for tables too long for rich
    (which spends about 2 ms measuring each row: minutes for a 100,000-point
    sweep)."""
    rows = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(header), line("-" * w for w in widths)] + [line(r) for r in rows])


def finite(value: Any) -> Any:
    """`value` with NaN and infinities as None, so its JSON is valid (null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
