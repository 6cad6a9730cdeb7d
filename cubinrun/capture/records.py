"""What the captured program's processes left: the raw records that the Triton
hook (hook/cubinrun_triton_hook.py) and the CUPTI injection library
(injection.c) write, one folder per process under `raw/`, read back as plain
objects for the spec writer.

Each process folder holds `summary.json` (launches seen, what was skipped and
why, an error that stopped capture) and one numbered folder per captured
launch: `record.json` and the raw bytes of each memory region before the
launch (`rK.before`), after it when it changed (`rK.after`) and after a second
launch from the same inputs when that differed (`rK.again`). A CUPTI process
folder also holds the modules it saw, `modules/mID.cubin`. docs/capture.md
lists a CUPTI record's fields ("The raw records").
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CubinrunError
from ..files import read_bounded

MAX_RECORD_BYTES = 64 << 20          # a record.json: params of a few launches' worth


@dataclass(frozen=True)
class Region:
    """Memory the launch could touch: from its lowest pointer to the allocation's end."""
    size: int
    before: Path
    after: Path | None              # None: the launch left it as it was
    again: Path | None = None       # the second launch's, when it differed
    global_name: str | None = None  # a module global (`__constant__`, `__device__`), by symbol


@dataclass(frozen=True)
class Record:
    source: str                     # "triton" or "cupti"
    folder: Path
    data: dict                      # record.json as written
    regions: tuple[Region, ...]

    @property
    def kernel(self) -> str:
        return str(self.data.get("kernel", "?"))

    @property
    def key(self) -> str:
        return f"{self.source}|{self.data.get('key', self.folder)}"

    @property
    def saved_bytes(self) -> int:
        return sum(r.size * (1 + (r.after is not None)) for r in self.regions)


@dataclass
class Process:
    """One process of the program: its summary and its records, in launch order."""
    folder: Path
    summary: dict
    records: list[Record] = field(default_factory=list)


def read_processes(raw: Path) -> list[Process]:
    """Every process folder under `raw`, oldest pid first."""
    if not raw.is_dir():
        return []
    processes = []
    for folder in sorted(raw.iterdir(), key=_pid_order):
        if not folder.is_dir() or folder.is_symlink():
            continue
        summary = _json(folder / "summary.json") or {"skipped": [], "launches_seen": 0}
        process = Process(folder, summary)
        for launch in sorted(p for p in folder.iterdir() if p.name.isdigit() and p.is_dir()):
            record = read_record(launch)
            if record is not None:
                process.records.append(record)
        processes.append(process)
    return processes


def read_counts(raw: Path) -> tuple[int, int]:
    """(launches seen, launches captured) so far, from the processes' summaries."""
    seen = captured = 0
    for summary in raw.glob("*/summary.json"):
        data = _json(summary) or {}
        seen += int(data.get("launches_seen", 0))
        captured += int(data.get("captured", 0))
    return seen, captured


def read_record(folder: Path) -> Record | None:
    """A launch's record; None when its process died before finishing it."""
    data = _json(folder / "record.json")
    if not isinstance(data, dict):
        return None
    regions = []
    for region in data.get("regions", []):
        before = folder / str(region["before"])
        if not before.is_file() or before.stat().st_size != int(region["size"]):
            return None
        after = folder / region["after"] if region.get("after") else None
        again = folder / region["again"] if region.get("again") else None
        if any(p is not None and (not p.is_file() or p.stat().st_size != int(region["size"]))
               for p in (after, again)):
            return None                 # a write cut short (a full disk)
        regions.append(Region(int(region["size"]), before, after, again,
                              str(region["global"]) if region.get("global") else None))
    return Record(str(data.get("source", "?")), folder, data, tuple(regions))


def _json(path: Path):
    try:
        return json.loads(read_bounded(path, MAX_RECORD_BYTES, "a capture record"))
    except (OSError, ValueError, CubinrunError):     # missing, cut short or too big
        return None


def _pid_order(path: Path) -> tuple:
    kind, _, pid = path.name.rpartition("-")
    return (int(pid) if pid.isdigit() else 0, kind)
