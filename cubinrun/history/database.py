"""The history's database: a URL (or a path, an SQLite file) opened as an
SQLAlchemy engine, its schema brought up to date by Alembic.

SQLite: WAL (readers never wait for a writer), and every writing transaction
(`writing(engine)`) begins IMMEDIATE, so writers queue for the file's lock
from their first statement (up to two minutes each) rather than failing when
a read turns into a write.
PostgreSQL (or any server SQLAlchemy speaks): migrations run under an
advisory lock, so processes starting together on an empty database make the
tables once.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError

# `--db` when it is not given: this variable, else this file in the current folder.
ENVIRONMENT = "CUBINRUN_HISTORY_DB"
DEFAULT_FILE = "cubinrun-history.sqlite"
# How long a writer waits for another's lock before giving up, in seconds.
BUSY_TIMEOUT_S = 120
# The execution option that marks a writing transaction.
_WRITE = "cubinrun_history_write"
# PostgreSQL's advisory lock key for migrations (any constant the history owns).
_MIGRATION_LOCK = 0x6375_6269_6E68


def resolve_url(db: str | None) -> str:
    """The SQLAlchemy URL for --db: a URL as given, a path as an SQLite file."""
    db = db or os.environ.get(ENVIRONMENT) or DEFAULT_FILE
    if "://" in db:
        return db
    path = Path(db)
    if path.is_symlink():               # SQLite would write through it, wherever it points
        raise UsageError(f"--db {db}: a link; give the database file itself or a URL")
    if path.exists() and not path.is_file():
        raise UsageError(f"--db {db}: not a regular file; give a file (an SQLite database) "
                         "or a URL")
    return "sqlite:///" + str(path.resolve())


def shown(url: str) -> str:
    """The URL without its password, for messages."""
    from sqlalchemy.engine import make_url
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:                   # an unreadable URL: it is what the user typed
        return url.split("@")[-1]


def connect(url: str):
    """An engine on `url` with the schema up to date; UsageError (exit 2) for
    a URL it cannot open or a database a newer cubinrun wrote."""
    try:
        import alembic  # noqa: F401
        import sqlalchemy as sa
    except ImportError as exc:
        raise UsageError(f"cubinrun history needs the history extra ({exc.name} is missing): "
                         "pip install 'cubinrun[history]'") from None
    try:
        engine = sa.create_engine(url, **_options(url))
    except sa.exc.ArgumentError as exc:
        raise UsageError(f"--db {shown(url)}: not a database URL ({first_line(exc)})") from None
    except ImportError as exc:
        raise UsageError(f"--db {shown(url)}: its database driver is missing ({exc.name}); "
                         "install it (PostgreSQL: psycopg2-binary)") from None
    if engine.dialect.name == "sqlite":
        _sqlite_transactions(engine)
    with failures(url):
        _migrate(engine)
    return engine


def _options(url: str) -> dict:
    if url.startswith("sqlite"):
        return {"connect_args": {"timeout": BUSY_TIMEOUT_S}}
    return {"pool_pre_ping": True}


def _sqlite_transactions(engine) -> None:
    """pysqlite's own transaction handling off, so that BEGIN IMMEDIATE and
    the WAL pragma are ours to issue (SQLAlchemy's documented recipe)."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connected(dbapi_connection, _record):
        dbapi_connection.isolation_level = None
        dbapi_connection.execute("PRAGMA journal_mode=WAL")
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    @event.listens_for(engine, "begin")
    def _begin(connection):
        write = connection.get_execution_options().get(_WRITE)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def writing(engine):
    """The engine for a transaction that writes (SQLite: BEGIN IMMEDIATE)."""
    return engine.execution_options(**{_WRITE: True})


def _migrate(engine) -> None:
    """Alembic's upgrade to the newest revision, in one transaction under the
    database's lock; nothing to do (the common case) costs one query."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    config = Config()
    # Python files, shipped as the package's own (setuptools finds the folder
    # as a namespace package); .ci/wheel's suite migrates from the wheel.
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    head = ScriptDirectory.from_config(config).get_current_head()
    with engine.connect() as connection:
        if MigrationContext.configure(connection).get_current_revision() == head:
            return
    with writing(engine).begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        current = MigrationContext.configure(connection).get_current_revision()
        if current is not None and current != head and not _known(config, current):
            raise UsageError(f"--db {shown(str(engine.url))}: its schema ({current}) is newer "
                             "than this cubinrun's; upgrade cubinrun")
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def _known(config, revision: str) -> bool:
    from alembic.script import ScriptDirectory
    try:
        return ScriptDirectory.from_config(config).get_revision(revision) is not None
    except Exception:                   # alembic's "Can't locate revision"
        return False


class failures:
    """A context that turns SQLAlchemy's errors (a refused connection, a file
    that is not a database, a lock held past the timeout) into one line."""

    def __init__(self, url: str):
        self.url = url

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, _traceback):
        if exc is None or not type(exc).__module__.startswith("sqlalchemy"):
            return False
        raise UsageError(f"--db {shown(self.url)}: {first_line(exc)}") from None


def first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
