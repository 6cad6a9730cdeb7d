"""Results files for the history tests: one `launch --jsonl` file per commit
of a few series, with steps where a test puts them, and `history add` run
from several real processes at once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from support.repo import PACKAGE_PARENT

DEVICE = {"name": "NVIDIA H200", "ordinal": 0}


def result(spec: str, median: float, *, point=None, passed=True, exit_code=0, **timing) -> dict:
    return {"spec": spec, "kernel": Path(spec).stem, "point": point or {}, "device": DEVICE,
            "status": "ok" if exit_code == 0 else "check-failed", "exit_code": exit_code,
            "check": {"passed": passed},
            "timing": {"median_us": median, "std_us": median * 0.01, "samples": 200,
                       "p10_us": median * 0.99, "p90_us": median * 1.01, **timing}}


def write_commits(folder: Path, commits: int, specs: dict[str, float], steps=None,
                  sigma: float = 0.002, seed: int = 0) -> list[Path]:
    """One results file per commit, `specs` {name: median us}; `steps`
    {name: (first commit of the new level, factor)}."""
    rng = np.random.default_rng(seed)
    files = []
    for commit in range(commits):
        path = folder / f"c{commit:04d}.jsonl"
        lines = []
        for spec, median in specs.items():
            at, factor = (steps or {}).get(spec, (commits, 1.0))
            value = median * (factor if commit >= at else 1.0) * float(np.exp(rng.normal(0, sigma)))
            lines.append(json.dumps(result(spec, value)))
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
    return files


def sha(commit: int) -> str:
    """Commit number `commit`'s name, 40 characters that differ from the start."""
    return f"{commit:04d}" + "ab" * 18


def add_args(path: Path, commit: int, db: str, branch: str = "main") -> list[str]:
    return ["history", "add", str(path), "--db", db, "--commit", sha(commit),
            "--branch", branch, "--date", f"2026-01-{1 + commit // 1440:02d}T"
            f"{commit // 60 % 24:02d}:{commit % 60:02d}:00Z"]


def add_concurrently(files: list[Path], db: str) -> list[subprocess.CompletedProcess]:
    """`history add` of each file (file i as commit i) from its own process, all started at once."""
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    processes = [subprocess.Popen([sys.executable, "-m", "cubinrun", *add_args(f, i, db),
                                   "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env) for i, f in enumerate(files)]
    done = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def fill_store(db_url: str, series: int, commits: int, *, seed: int = 0) -> None:
    """`series` series x `commits` commits straight into the store (what
    `history add` of one file per commit would keep, without the files):
    series 0 slows down 10% at the newest commit, series 1 by 5% halfway,
    series 2's check fails at its newest commit."""
    import datetime

    from cubinrun.history import database, store
    from cubinrun.history.record import Commit, run_of, series_of
    from cubinrun.results.reader import Located
    rng = np.random.default_rng(seed)
    engine = database.connect(db_url)
    start = datetime.datetime(2026, 1, 1)
    for commit in range(commits):
        measured = Commit(sha(commit), "main", start + datetime.timedelta(hours=commit))
        items = []
        for s in range(series):
            factor = (1.1 if s == 0 and commit == commits - 1 else
                      1.05 if s == 1 and commit >= commits // 2 else 1.0)
            median = (5.0 + s) * factor * float(np.exp(rng.normal(0, 0.003)))
            one = Located(result(f"configs/k{s:03d}.yaml", median, point={"N": 1 << (10 + s % 8)},
                                 passed=not (s == 2 and commit == commits - 1)))
            one_series = series_of(one)
            items.append((one_series, run_of(one, one_series["key"], measured, "r.jsonl")))
        store.add(engine, items)
