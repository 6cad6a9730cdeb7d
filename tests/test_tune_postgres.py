"""`cubinrun tune --storage postgresql://...` against a real PostgreSQL server
that this test run starts (initdb and pg_ctl from the `postgresql` package, a
Unix socket in a temporary folder, no TCP port): two tune processes share one
study, and a third finds everything measured. Skipped where the server's
binaries or psycopg2 are missing (.ci/run installs both)."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import tunelandscape
from test_tune import run_concurrently

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")
pytest.importorskip("psycopg2", reason="the PostgreSQL driver (psycopg2-binary, test extra)")


def server_binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).resolve().parent if pg_ctl else None


@pytest.fixture(scope="module")
def postgres_url():
    binaries = server_binaries()
    if binaries is None or not (binaries / "initdb").exists():
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="cubinrun-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:                       # the server refuses to run as root
        import pwd
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no postgres user to run the server")
        os.chown(folder, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", 20000 + os.getpid() % 20000
    run = lambda *command: subprocess.run([*as_user, *map(str, command)], check=True,  # noqa: E731
                                          capture_output=True, text=True, timeout=120)
    run(binaries / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
    run(binaries / "pg_ctl", "-D", data, "-w", "-l", folder / "log", "-o",
        f"-k {folder} -c listen_addresses='' -p {port} -c fsync=off", "start")
    try:
        yield f"postgresql+psycopg2://postgres@/postgres?host={folder}&port={port}"
    finally:
        run(binaries / "pg_ctl", "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def test_two_processes_share_one_postgres_study(postgres_url, tmp_path):
    spec, results = tunelandscape.write(tmp_path, "smooth")
    args = [str(spec), "--replay", str(results), "--strategy", "brute", "--storage", postgres_url]
    docs = run_concurrently(args, 2)
    measured = {json.dumps(e["point"], sort_keys=True) for d in docs for e in d["evaluations"]
                if e["origin"] == "measured"}
    assert len(measured) == 64
    assert sum(d["measured"] for d in docs) <= 64 + 8
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
