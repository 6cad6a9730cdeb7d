"""Helpers for the tests of history and tune databases: cubinrun run as a real
process (optionally with some modules made unimportable, as where they are
not installed), a real history store filled from a few commits, one page of
an SQLite file damaged, and a replayed tune on a storage."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from support.repo import PACKAGE_PARENT
from support.historydata import add_args, write_commits

from support import tunelandscape

# The line that runs cubinrun's CLI with the modules named in argv[1] (comma
# separated) unimportable, the rest of argv its arguments.
_BLOCKING_MAIN = ("import sys; blocked = sys.argv.pop(1)\n"
                  "for name in filter(None, blocked.split(',')): sys.modules[name] = None\n"
                  "from cubinrun.cli import main; main()")


def cubinrun(*args, blocked: tuple[str, ...] = (), cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    return subprocess.run([sys.executable, "-c", _BLOCKING_MAIN, ",".join(blocked),
                           *map(str, args)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


SPECS = {"configs/small.yaml": 6.0, "configs/long.yaml": 400.0}


def fill_history(folder: Path, db: str, commits: int = 3, first: int = 0) -> None:
    """`history add` of `commits` commits (numbered from `first`) into `db`
    (in this process: the store is the subject, not the adding)."""
    from cubinrun.cli import main
    sub = folder / f"commits{first}"
    sub.mkdir(exist_ok=True)
    for i, path in enumerate(write_commits(sub, commits, SPECS, seed=first), start=first):
        try:
            main(add_args(path, i, db))
        except SystemExit as done:
            assert done.code == 0, f"history add of {path} exited {done.code}"


def damage_a_page(path: Path, table: str) -> None:
    """Overwrite one of `table`'s pages (a leaf where SQLite's dbstat says
    which, else the file's middle page) with bytes no page holds."""
    with sqlite3.connect(path) as connection:
        # every page in the file itself (none newer in the write-ahead log)
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = connection.execute("PRAGMA page_size").fetchone()[0]
        count = connection.execute("PRAGMA page_count").fetchone()[0]
        try:
            pages = [p for (p,) in connection.execute(
                "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,))]
        except sqlite3.OperationalError:            # built without dbstat
            pages = []
    connection.close()
    page = pages[len(pages) // 2] if pages else count // 2 + 1
    with open(path, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(bytes(range(256)) * (size // 256))


def tune(folder: Path, storage: str, *more, blocked: tuple[str, ...] = ()):
    """A replayed brute-force tune of the `smooth` landscape (64 points) on `storage`."""
    spec, results = tunelandscape.write(folder, "smooth")
    done = cubinrun("tune", "--json", spec, "--replay", results, "--strategy", "brute",
                    "--storage", storage, *more, blocked=blocked)
    return done, (json.loads(done.stdout) if done.returncode == 0 else None)


def history_works(folder: Path, db: str, first: int) -> None:
    """Two more commits added to `db` (from commit `first`) and checked, each a process."""
    sub = folder / f"added{first}"
    sub.mkdir(exist_ok=True)
    for i, path in enumerate(write_commits(sub, 2, SPECS, seed=first), start=first):
        done = cubinrun(*add_args(path, i, db))
        assert done.returncode == 0, done.stderr
    done = cubinrun("history", "check", "--db", db, "--branch", "main")
    assert done.returncode == 0 and "2 series on main" in done.stdout, done.stderr


def tune_resumes(folder: Path, storage: str, stored: int) -> None:
    """A tune of 10 evaluations on `storage` that finds `stored` of them there."""
    done, doc = tune(folder, storage, "--max-evals", "10")
    assert done.returncode == 0, done.stderr
    assert (doc["stored"], doc["measured"]) == (stored, 10 - stored)
