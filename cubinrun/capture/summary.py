"""`capture.json`: what a capture did, for people and scripts: the program and
its exit code, how many launches each process saw, one entry per spec written
(kernel, grid, what it checks and how), and every launch left out with the
reason (merged by kernel and reason, with a count)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .records import Process, Record
from .selection import Skipped
from .spec_writer import Written

SUMMARY_FILE = "capture.json"


@dataclass
class Summary:
    program: list[str]
    exit_code: int | None = None
    wall_s: float | None = None
    specs: list[dict] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    processes: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add_processes(self, processes: list[Process]) -> None:
        for p in processes:
            self.processes.append({"name": p.folder.name,
                                   "launches_seen": int(p.summary.get("launches_seen", 0)),
                                   "captured": len(p.records),
                                   "error": p.summary.get("error")})

    def add_spec(self, record: Record, written: Written) -> None:
        data = record.data
        self.specs.append({
            "spec": written.spec, "kernel": record.kernel, "source": record.source,
            "grid": data.get("grid"), "block": data.get("block"),
            "deterministic": data.get("deterministic"),
            "checks": list(written.checks), "tolerance": list(written.tolerance),
            "not_checked": list(written.unchecked),
            "bytes_saved": record.saved_bytes,
            # how the launch came: through `extra`, as a graph's node, with module globals
            "extra": bool(data.get("extra")), "graph": data.get("graph"),
            "globals": [r.global_name for r in record.regions if r.global_name]})

    def skip(self, kernel: str, reason: str) -> None:
        self.skipped.append(Skipped(kernel, reason, 1))

    @property
    def launches_seen(self) -> int:
        return sum(p["launches_seen"] for p in self.processes)

    def to_json(self) -> str:
        return json.dumps({
            "program": self.program, "exit_code": self.exit_code,
            "wall_s": None if self.wall_s is None else round(self.wall_s, 3),
            "launches_seen": self.launches_seen, "captured": len(self.specs),
            "replayed_passing": (sum(bool(s["replay"]["passed"]) for s in self.specs)
                                 if any("replay" in s for s in self.specs) else None),
            "specs": self.specs,
            "skipped": [{"kernel": s.kernel, "reason": s.reason, "count": s.count}
                        for s in self.skipped],
            "processes": self.processes, "warnings": self.warnings}, indent=2) + "\n"
