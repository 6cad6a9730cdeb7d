"""What the output-file tests (test_output_links.py, test_output_full_disk.py)
share: `cubinrun` as a real process, a replayed tune's landscape, and a
history database of one series."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tunelandscape
from conftest import PACKAGE_PARENT
from historydata import add_args, write_commits

REPO = Path(__file__).resolve().parent.parent
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
