"""`cubinrun tune --storage postgresql://...` against a real PostgreSQL server
that this test run starts (tests/support/postgres_server.py): two tune processes share one
study, and a third finds everything measured. Skipped where the server's
binaries or psycopg2 are missing (.ci/run installs both)."""
from __future__ import annotations

import json

import pytest

from support import tunelandscape
from support.postgres_server import postgres_url  # noqa: F401  (the fixture)
from support.tuning import run_concurrently

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")
pytest.importorskip("psycopg2", reason="the PostgreSQL driver (psycopg2-binary, test extra)")


def test_two_processes_share_one_postgres_study(postgres_url, tmp_path):
    spec, results = tunelandscape.write(tmp_path, "smooth")
    args = [str(spec), "--replay", str(results), "--strategy", "brute", "--storage", postgres_url]
    docs = run_concurrently(args, 2)
    measured = {json.dumps(e["point"], sort_keys=True) for d in docs for e in d["evaluations"]
                if e["origin"] == "measured"}
    assert len(measured) == 64
    assert sum(d["measured"] for d in docs) == 64       # none twice
    assert all(d["storage"].startswith("postgresql+psycopg2://postgres@/postgres") for d in docs)
    third = run_concurrently(args, 1)[0]
    assert third["measured"] == 0 and third["stored"] == 64
    assert third["best"]["point"] == {"BX": 64, "TILE": 5}


def test_a_model_based_tune_resumes_from_postgres(postgres_url, tmp_path):
    spec, results = tunelandscape.write(tmp_path, "smooth")
    args = [str(spec), "--replay", str(results), "--strategy", "tpe", "--seed", "4",
            "--max-evals", "15", "--storage", postgres_url]
    first = run_concurrently(args, 1)[0]
    again = run_concurrently(args, 1)[0]
    assert first["measured"] == 15 and again["measured"] == 0 and again["stored"] == 15
