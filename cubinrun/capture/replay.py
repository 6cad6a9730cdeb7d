"""The captured folder replayed before it is handed over (`--verify`, the
default): `cubinrun launch --no-bench` on every spec, in a process of its own
with stdout left out (the command's stdout is the program's), and each spec's
outcome recorded in capture.json, so a launch that does not replay is listed
with its reason as a launch that was not captured is."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .summary import Summary

RESULTS = ".replay.jsonl"
MAX_ERROR = 300                     # characters of a failed run's message kept per spec


def replay(folder: Path, summary: Summary) -> None:
    results = folder / RESULTS
    command = [sys.executable, "-m", "cubinrun", "launch", "--no-bench", "--jsonl",
               str(results), str(folder)]
    proc = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    outcomes = {}
    if results.is_file():
        for line in results.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            outcomes[Path(str(record.get("spec", ""))).name] = record
        results.unlink()
    for spec in summary.specs:
        record = outcomes.get(spec["spec"])
        if record is None:
            spec["replay"] = {"passed": False, "status": "not run",
                              "error": proc.stderr.strip()[-MAX_ERROR:] or None}
            continue
        error = record.get("error") or {}
        spec["replay"] = {"passed": record.get("exit_code") == 0,
                          "status": record.get("status"),
                          "error": (str(error.get("message"))[:MAX_ERROR]
                                    if error.get("message") else None)}
