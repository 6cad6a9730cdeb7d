"""`cubinrun history` against a real PostgreSQL server this test run starts
(tests/support/postgres_server.py): 8 processes adding at once into an empty
database (the schema made once, under the migration lock) lose nothing, and
check reads it back. Skipped where the server or psycopg2 is missing."""
from __future__ import annotations

import json

import pytest
from support.historydata import add_concurrently, sha, write_commits
from support.postgres_server import postgres_url  # noqa: F401  (the fixture)
from support.cli import run

pytest.importorskip("alembic", reason="cubinrun history needs the history extra")
pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")
pytest.importorskip("psycopg2", reason="the PostgreSQL driver (psycopg2-binary, test extra)")


def test_eight_processes_add_into_one_postgres_database(postgres_url, tmp_path, capsys):
    files = write_commits(tmp_path, 8, {"configs/a.yaml": 50.0, "configs/b.yaml": 5.0},
                          steps={"configs/a.yaml": (7, 1.2)})
    done = add_concurrently(files, postgres_url)
    assert all(d.returncode == 0 for d in done), [d.stderr for d in done]
    assert sum(json.loads(d.stdout)["added"] for d in done) == 16
    again = add_concurrently(files[:2], postgres_url)        # idempotent there too
    assert [json.loads(d.stdout)["already_stored"] for d in again] == [2, 2]
    code, out, err = run(capsys, "history", "list", "--db", postgres_url, "--json")
    assert code == 0 and sorted(s["runs"] for s in json.loads(out)["series"]) == [8, 8], err
    code, out, _ = run(capsys, "history", "check", "--db", postgres_url, "--branch", "main",
                       "--json")
    [a] = [s for s in json.loads(out)["series"] if s["spec"] == "configs/a.yaml"]
    assert code == 5 and a["regressions"][0]["commit"] == sha(7)
