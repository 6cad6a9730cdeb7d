"""History and tune against a real PostgreSQL server (tests/support/postgres_server.py),
each test in a database of its own: the documented bare `postgresql://` URL
opens with psycopg (what the extras install) and, where only that one is
there, with psycopg2; the history and a tune share one database, created in
either order, and both keep working."""
from __future__ import annotations

import json
import uuid

import pytest
from support.dbtools import SPECS, cubinrun, history_works, tune, tune_resumes
from support.historydata import add_args, write_commits
from support.postgres_server import postgres_url  # noqa: F401  (the fixture)

pytest.importorskip("alembic", reason="cubinrun history needs the history extra")
pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")
pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")
pytest.importorskip("psycopg", reason="the PostgreSQL driver (psycopg[binary]: the extras)")
pytest.importorskip("psycopg2", reason="the other PostgreSQL driver (psycopg2-binary, test extra)")

# The module left unimportable for a bare postgresql:// to find each driver.
DRIVERS = {"psycopg": (), "psycopg2": ("psycopg",)}


@pytest.fixture
def database(postgres_url):  # noqa: F811
    """A fresh database on the server, as a bare postgresql:// URL."""
    import sqlalchemy as sa
    name = "t" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE {name}")
    engine.dispose()
    bare = postgres_url.replace("postgresql+psycopg2://", "postgresql://", 1)
    assert bare.startswith("postgresql://postgres@/postgres?")
    return bare.replace("/postgres?", f"/{name}?", 1)


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_documented_url_works_for_history_with_either_driver(database, driver, tmp_path):
    for i, path in enumerate(write_commits(tmp_path, 2, SPECS)):
        done = cubinrun(*add_args(path, i, database), blocked=DRIVERS[driver])
        assert done.returncode == 0, done.stderr
    done = cubinrun("history", "list", "--db", database, "--json", blocked=DRIVERS[driver])
    assert done.returncode == 0, done.stderr
    assert [s["runs"] for s in json.loads(done.stdout)["series"]] == [2, 2]


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_documented_url_works_for_tune_with_either_driver(database, driver, tmp_path):
    done, doc = tune(tmp_path, database, "--max-evals", "5", blocked=DRIVERS[driver])
    assert done.returncode == 0, done.stderr
    assert doc["measured"] == 5 and doc["storage"] == database
    done, doc = tune(tmp_path, database, "--max-evals", "5", blocked=DRIVERS[driver])
    assert done.returncode == 0 and (doc["stored"], doc["measured"]) == (5, 0), done.stderr


@pytest.mark.parametrize("history_first", [True, False])
def test_history_and_tune_share_one_postgres_database_in_either_order(database, tmp_path,
                                                                      history_first):
    if history_first:
        history_works(tmp_path, database, 0)
        tune_resumes(tmp_path, database, 0)
    else:
        tune_resumes(tmp_path, database, 0)
        history_works(tmp_path, database, 0)
    history_works(tmp_path, database, 2)        # both still work, each on its own tables
    tune_resumes(tmp_path, database, 10)
