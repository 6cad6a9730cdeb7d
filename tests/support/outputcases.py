"""What the output-file tests (test_output_links.py, test_output_full_disk.py)
share: `cubinrun` as a real process, a replayed tune's landscape, and a
history database of one series."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
import sys

import pytest

from support import tunelandscape
from support.repo import PACKAGE_PARENT, REPO
from support.historydata import add_args, write_commits

VECTOR_ADD = REPO / "configs" / "vector_add.yaml"


def cubinrun(*args, env: dict | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE_PARENT), **(env or {})})


@pytest.fixture
def landscape(tmp_path):
    """(spec, results) of a landscape a tune replays."""
    pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")
    return tunelandscape.write(tmp_path, "smooth")


@pytest.fixture(scope="module")
def history_db(tmp_path_factory):
    """A SQLite history URL: one series over three commits on main."""
    pytest.importorskip("sqlalchemy", reason="history needs the history extra")
    folder = tmp_path_factory.mktemp("runs")
    db = f"sqlite:///{folder / 'h.sqlite'}"
    for commit, path in enumerate(write_commits(folder, 3, {"bench/a.yaml": 10.0})):
        done = cubinrun(*add_args(path, commit, db))
        assert done.returncode == 0, done.stderr
    return db
