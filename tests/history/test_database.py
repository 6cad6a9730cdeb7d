"""The history's database under what users and disks do to it, in real
processes on real SQLite files: a damaged page, rows changed by hand, URLs
SQLAlchemy cannot read, dates past year 9999, a results file whose check is
not a boolean, secrets in URLs never echoed, a store that kept its revision
in Alembic's default table (before the history had its own), and no
PostgreSQL driver at all. Each is one line naming --db (or the file, field or
flag) and exit 2."""
from __future__ import annotations

import json
import sqlite3

import pytest
from support.dbtools import cubinrun, damage_a_page, fill_history, one_line
from support.historydata import add_args, result, write_commits

pytest.importorskip("sqlalchemy", reason="cubinrun history needs the history extra")
pytest.importorskip("alembic", reason="cubinrun history needs the history extra")
pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")

READERS = [["list"], ["check", "--branch", "main"], ["report", "--branch", "main", "-o", "out"]]


def test_a_damaged_page_is_one_line_for_every_reader(tmp_path):
    db = tmp_path / "h.sqlite"
    fill_history(tmp_path, str(db), commits=30)
    damage_a_page(db, "runs")
    for command in READERS:
        done = cubinrun("history", *command, "--db", db, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert one_line(done) == f"error: --db sqlite:///{db}: database disk image is malformed"


@pytest.mark.parametrize("change, problem, readers", [
    ("UPDATE runs SET commit_date = 'yesterday' WHERE id = 2",
     "a stored value is not what the history writes (Invalid isoformat string: 'yesterday')",
     READERS),
    # list reads only the newest date, which SQLite's max() finds among the text ones
    ("UPDATE runs SET commit_date = 12345 WHERE id = 2",
     "a stored value is not what the history writes", READERS[1:]),
    ("UPDATE series SET point = '{x' WHERE id = 1",
     "series 1: its point is not a JSON object ('{x')", READERS),
    ("UPDATE series SET point = '[1, 2]' WHERE id = 1", "series 1: its point is not a JSON object",
     READERS),
    ("UPDATE runs SET median_us = 'fast' WHERE id = 1",
     "a run of series 1: its median_us is not what the history writes ('fast')", READERS[1:]),
])
def test_rows_changed_by_hand_are_one_line(tmp_path, change, problem, readers):
    db = tmp_path / "h.sqlite"
    fill_history(tmp_path, str(db))
    with sqlite3.connect(db) as connection:
        connection.execute(change)
    connection.close()
    for command in readers:
        done = cubinrun("history", *command, "--db", db, cwd=tmp_path)
        assert done.returncode == 2 and problem in one_line(done), (command, done.stderr)
        assert one_line(done).startswith(f"error: --db sqlite:///{db}: ")


@pytest.mark.parametrize("flag, value", [("--date", "9999-12-31T23:59:59-12:00"),
                                          ("--date", "0001-01-01T00:00:00+01:00")])
def test_a_date_beyond_what_python_holds_names_its_flag(tmp_path, flag, value):
    [path] = write_commits(tmp_path, 1, {"configs/a.yaml": 5.0})
    args = add_args(path, 0, str(tmp_path / "h.sqlite"))
    args[args.index(flag) + 1] = value
    done = cubinrun(*args)
    assert done.returncode == 2
    assert one_line(done).startswith(f"error: {flag} '{value}': beyond the dates Python holds")
    assert not (tmp_path / "h.sqlite").exists()


def test_prune_before_a_date_beyond_year_9999_names_before(tmp_path):
    db = tmp_path / "h.sqlite"
    fill_history(tmp_path, str(db))
    done = cubinrun("history", "prune", "--db", db, "--before", "9999-12-31T23:59:59-12:00")
    assert done.returncode == 2 and one_line(done).startswith("error: --before '9999-12-31")


@pytest.mark.parametrize("jsonl, passed", [(True, "yes"), (False, "yes"), (True, 1)])
def test_a_check_that_is_not_a_boolean_names_file_line_and_field(tmp_path, jsonl, passed):
    good = result("configs/a.yaml", 5.0)
    bad = {**result("configs/b.yaml", 7.0), "check": {"passed": passed}}
    path = tmp_path / ("r.jsonl" if jsonl else "r.json")
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n" if jsonl else
                    json.dumps({"results": [good, bad]}))
    db = tmp_path / "h.sqlite"
    done = cubinrun(*add_args(path, 0, str(db)))
    line = one_line(done)
    assert done.returncode == 2 and "`check.passed` should be true, false or null" in line
    assert line.startswith(f"error: {path}:2: " if jsonl else f"error: {path}")
    assert not db.exists()              # nothing created or migrated for a bad file


URLS = [
    "postgresql://someone:hunter2pw@127.0.0.1:notaport/db?password=s3cr3tq",
    "postgresql+psycopg2://someone:hunter2pw@/db?host=/nonexistent-cubinrun&sslpassword=s3cr3tq",
    "postgresql://someone@/db?host=/nonexistent-cubinrun&password=s3cr3tq",
    "postgresql://someone:hunter2pw@/db?host=/nonexistent-cubinrun&connect_timeout=1&token=s3cr3tq",
    "mysql+nodriver://someone:hunter2pw@host/db?password=s3cr3tq",
]


@pytest.mark.parametrize("url", URLS)
def test_a_url_that_fails_is_one_line_naming_db_without_its_secrets(tmp_path, url):
    pytest.importorskip("psycopg2", reason="the PostgreSQL driver (test extra)")
    done = cubinrun("history", "list", "--db", url)
    line = one_line(done)
    assert done.returncode == 2 and line.startswith("error: --db ")
    for secret in ("hunter2pw", "s3cr3tq"):
        assert secret not in done.stdout + done.stderr


def test_a_port_that_is_not_a_number_says_not_a_database_url():
    done = cubinrun("history", "list", "--db", "postgresql://u:pw@host:notaport/db")
    assert done.returncode == 2
    assert one_line(done) == ("error: --db postgresql://u:***@host:notaport/db: not a database "
                              "URL (invalid literal for int() with base 10: 'notaport')")


def test_without_any_postgresql_driver_the_message_says_what_to_install():
    done = cubinrun("history", "list", "--db", "postgresql://u@/db?host=/nowhere",
                    blocked=("psycopg", "psycopg2"))
    assert done.returncode == 2
    assert one_line(done) == ("error: --db postgresql://u@/db?host=/nowhere: PostgreSQL needs a "
                              "driver and none is installed: pip install 'psycopg[binary]'")


def test_a_named_driver_that_is_missing_says_what_to_install():
    done = cubinrun("history", "list", "--db", "postgresql+psycopg2://u@/db?host=/nowhere",
                    blocked=("psycopg2",))
    assert done.returncode == 2 and one_line(done).endswith(
        "its database driver is missing (psycopg2): pip install psycopg2-binary")


def test_a_path_with_a_question_mark_is_a_file_name(tmp_path):
    db = tmp_path / "h?password=x.sqlite"
    fill_history(tmp_path, str(db), commits=1)
    assert db.is_file() and len(list(tmp_path.glob("*.sqlite"))) == 1


def test_a_store_that_kept_its_revision_in_alembic_version_moves_it(tmp_path):
    """Before the history had its own version table, Alembic's default one
    held its revision: such a store keeps working, and Optuna gets the
    default table back."""
    db = tmp_path / "h.sqlite"
    fill_history(tmp_path, str(db), commits=2)
    with sqlite3.connect(db) as connection:         # as an older cubinrun left it
        connection.execute("ALTER TABLE cubinrun_history_version RENAME TO alembic_version")
    connection.close()
    fill_history(tmp_path, str(db), commits=1, first=2)
    done = cubinrun("history", "list", "--db", db, "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(s["runs"] for s in json.loads(done.stdout)["series"]) == [3, 3]
    with sqlite3.connect(db) as connection:
        tables = {t for (t,) in connection.execute("SELECT name FROM sqlite_master")}
        [(revision,)] = connection.execute("SELECT version_num FROM cubinrun_history_version")
    connection.close()
    assert "alembic_version" not in tables and revision == "0001"


def test_an_optuna_revision_in_alembic_version_is_left_alone(tmp_path):
    db = tmp_path / "h.sqlite"
    with sqlite3.connect(db) as connection:         # what Optuna's storage stamps
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        connection.execute("INSERT INTO alembic_version VALUES ('v3.2.0.a')")
    connection.close()
    fill_history(tmp_path, str(db), commits=1)
    with sqlite3.connect(db) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == \
            [("v3.2.0.a",)]
    connection.close()


@pytest.mark.parametrize("url, expected", [
    ("postgresql://u:pw@host/db", "postgresql://u:***@host/db"),
    ("postgresql://u:p@ss@host/db", "postgresql://u:***@host/db"),     # an @ left unencoded
    ("postgresql://u@/db?host=/x&password=s%40c", "postgresql://u@/db?host=/x&password=***"),
    ("postgresql://h/d?sslpassword=a&token=b&user=c",
     "postgresql://h/d?sslpassword=***&token=***&user=c"),
    ("postgresql://host:5432/db?application_name=a@b",         # no secret: as typed
     "postgresql://host:5432/db?application_name=a@b"),
    ("sqlite:////tmp/h.sqlite", "sqlite:////tmp/h.sqlite"),
])
def test_a_url_is_shown_without_its_secrets(url, expected):
    from cubinrun.database_url import shown
    assert shown(url) == expected


def test_a_message_that_quotes_a_secret_loses_it_encoded_or_not():
    from cubinrun.database_url import hide_secrets
    url = "postgresql://u:p%2Fw@/db?host=/x&password=s%40c"
    text = hide_secrets('password "p/w" (p%2Fw) or "s@c" (s%40c) refused for u', url)
    assert text == 'password "***" (***) or "***" (***) refused for u'
