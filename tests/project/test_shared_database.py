"""A tune's storage shared, in real processes: several tunes at once on one
SQLite file never measure a point twice; the history and tunes in one
SQLite file (PostgreSQL: test_shared_database_postgres.py), created in either
order; a storage URL that fails is one line naming --storage, its secrets
never printed."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from support.repo import PACKAGE_PARENT
from support.dbtools import cubinrun, fill_history, history_works, one_line, tune, tune_resumes

from support import tunelandscape

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")

ALL_POINTS = {json.dumps(p, sort_keys=True)
              for p in tunelandscape.points(tunelandscape.SMOOTH_AXES)}


@pytest.mark.parametrize("attempt", range(2))
def test_three_tunes_at_once_on_one_sqlite_file_measure_each_point_once(tmp_path, attempt):
    """Processes that start together ask for the same points in step; before
    an ask waited for earlier trials' parameters, every such trio measured a
    point or more twice (4 of 4; two processes: 5 of 8)."""
    spec, results = tunelandscape.write(tmp_path, "smooth")
    args = [sys.executable, "-m", "cubinrun", "tune", "--json", str(spec), "--replay",
            str(results), "--strategy", "brute", "--storage", f"sqlite:///{tmp_path / 's.sqlite'}"]
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    processes = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=env) for _ in range(3)]
    measured = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        measured += [json.dumps(e["point"], sort_keys=True) for e in json.loads(out)["evaluations"]
                     if e["origin"] == "measured"]
    assert sorted(measured) == sorted(ALL_POINTS)        # each once, none twice


@pytest.mark.parametrize("history_first", [True, False])
def test_history_and_tune_share_one_sqlite_file_in_either_order(tmp_path, history_first):
    pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")
    db = tmp_path / "shared.sqlite"
    url = f"sqlite:///{db}"
    if history_first:
        history_works(tmp_path, str(db), 0)
        tune_resumes(tmp_path, url, 0)
    else:
        tune_resumes(tmp_path, url, 0)
        history_works(tmp_path, str(db), 0)
    history_works(tmp_path, url, 2)                # both still work, each on its own tables
    tune_resumes(tmp_path, url, 10)
    with sqlite3.connect(db) as connection:
        tables = {t for (t,) in connection.execute("SELECT name FROM sqlite_master "
                                                   "WHERE type = 'table'")}
        [(optunas,)] = connection.execute("SELECT version_num FROM alembic_version")
    connection.close()
    assert {"series", "runs", "cubinrun_history_version", "trials", "studies"} <= tables
    assert optunas.startswith("v")                  # Optuna's revision, untouched


def test_a_tune_on_a_history_an_older_cubinrun_made_says_how_to_move_its_version(tmp_path):
    pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")
    db = tmp_path / "old.sqlite"
    fill_history(tmp_path, str(db), commits=1)
    with sqlite3.connect(db) as connection:         # as an older cubinrun left it
        connection.execute("ALTER TABLE cubinrun_history_version RENAME TO alembic_version")
    connection.close()
    done, _ = tune(tmp_path, f"sqlite:///{db}", "--max-evals", "3")
    assert done.returncode == 2 and one_line(done) == (
        f"error: --storage sqlite:///{db}: it also holds a history an older cubinrun made, whose "
        f"schema version sits in Optuna's table: run `cubinrun history list --db sqlite:///{db}` "
        "once to move it, then tune again")
    assert cubinrun("history", "list", "--db", db).returncode == 0
    tune_resumes(tmp_path, f"sqlite:///{db}", 0)


@pytest.mark.parametrize("url, message", [
    ("postgresql://u:hunter2pw@host:notaport/db?password=s3cr3tq",
     "--storage postgresql://u:***@host:notaport/db?password=***: not a database URL "
     "(invalid literal for int() with base 10: 'notaport')"),
    ("postgresql://u:hunter2pw@/db?host=/nonexistent-cubinrun&password=s3cr3tq",
     "--storage postgresql://u:***@/db?host=/nonexistent-cubinrun&password=***: "),
])
def test_a_storage_url_that_fails_is_one_line_without_its_secrets(tmp_path, url, message):
    pytest.importorskip("psycopg2", reason="the PostgreSQL driver (test extra)")
    done, _ = tune(tmp_path, url, "--max-evals", "3")
    assert done.returncode == 2 and one_line(done).startswith("error: " + message)
    for secret in ("hunter2pw", "s3cr3tq"):
        assert secret not in done.stdout + done.stderr


def test_a_tune_without_any_postgresql_driver_says_what_to_install(tmp_path):
    done, _ = tune(tmp_path, "postgresql://u@/db?host=/nowhere", blocked=("psycopg", "psycopg2"))
    assert done.returncode == 2 and one_line(done) == (
        "error: --storage postgresql://u@/db?host=/nowhere: PostgreSQL needs a driver and none "
        "is installed: pip install 'psycopg[binary]'")
