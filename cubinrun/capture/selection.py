"""Which launches become specs: `--kernel REGEX`, `--skip N`, `--limit N` and
`--max-bytes` (per launch and in all), and by default only the first launch of
each distinct (kernel, grid, block, argument sizes).

Each process of the program applies them as it runs (so nothing it will not
keep is copied); a program of several processes is held to them once more
here, across all of its processes, in the order of their pids.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError
from .records import Process, Record


@dataclass(frozen=True)
class Selection:
    kernel: str | None = None       # a regular expression searched in the kernel's name
    limit: int | None = None
    skip: int = 0
    max_launch_bytes: int | None = None
    max_total_bytes: int | None = None

    def __post_init__(self):
        if self.kernel is not None:
            try:
                re.compile(self.kernel)
            except re.error as exc:
                raise UsageError(f"--kernel {self.kernel!r}: not a regular expression "
                                 f"({exc})") from None

    def for_processes(self) -> dict:
        """The options as the hook and the injection library read them."""
        return {"kernel": self.kernel, "limit": self.limit, "skip": self.skip,
                "max_launch_bytes": self.max_launch_bytes,
                "max_total_bytes": self.max_total_bytes}


@dataclass
class Skipped:
    kernel: str
    reason: str
    count: int = 1


def choose(processes: list[Process], selection: Selection) -> tuple[list[Record], list[Skipped]]:
    """The records to write as specs, and what was left out (merged by kernel and
    reason: a loop's millionth launch adds a count, not a line)."""
    skipped: dict[tuple[str, str], Skipped] = {}

    def skip(kernel: str, reason: str, count: int = 1) -> None:
        entry = skipped.setdefault((kernel, reason), Skipped(kernel, reason, 0))
        entry.count += count

    for process in processes:
        for s in process.summary.get("skipped", []):
            skip(str(s.get("kernel", "?")), str(s.get("reason", "?")), int(s.get("count", 1)))
    chosen, keys, total = [], set(), 0
    for record in (r for p in processes for r in p.records):
        if record.key in keys:
            skip(record.kernel, "a launch of the same kernel, grid and sizes was already seen")
            continue
        keys.add(record.key)
        if selection.limit is not None and len(chosen) >= selection.limit:
            skip(record.kernel, "--limit")
            continue
        size = record.saved_bytes
        if selection.max_total_bytes is not None and total + size > selection.max_total_bytes:
            skip(record.kernel, f"--max-bytes: {total} bytes saved already, {size} more")
            continue
        total += size
        chosen.append(record)
    return chosen, list(skipped.values())


def parse_bytes(text: str) -> tuple[int | None, int | None]:
    """`--max-bytes`: `SIZE` (per launch and in all) or `LAUNCH,TOTAL`; sizes in bytes
    or with K, M, G, T (powers of 1024)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) > 2 or not all(parts):
        raise UsageError(f"--max-bytes {text!r}: give SIZE or PER_LAUNCH,TOTAL (e.g. 1G,8G)")
    sizes = [_size(p, text) for p in parts]
    return (sizes[0], sizes[0]) if len(sizes) == 1 else (sizes[0], sizes[1])


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(part: str, text: str) -> int:
    match = re.fullmatch(r"(\d+)\s*([KMGT]?)(?:i?B)?", part, re.I)
    if not match:
        raise UsageError(f"--max-bytes {text!r}: {part!r} is not a size (e.g. 512M, 2G)")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]
