"""A real PostgreSQL server for the tests that need one: initdb and pg_ctl
from the `postgresql` package, a Unix socket in a temporary folder, no TCP
port. `postgres_url` is a module-scoped fixture (import it into a test
module); it skips where the server's binaries are missing (.ci/run installs
them)."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


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
