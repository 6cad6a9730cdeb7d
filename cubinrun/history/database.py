"""The history's database: a URL (or a path, an SQLite file) opened as an
SQLAlchemy engine, its schema brought up to date by Alembic.

SQLite: WAL (readers never wait for a writer), and every writing transaction
(`writing(engine)`) begins IMMEDIATE, so writers queue for the file's lock
from their first statement (up to two minutes each) rather than failing when
a read turns into a write.
PostgreSQL (or any server SQLAlchemy speaks): migrations run under an
advisory lock, so processes starting together on an empty database make the
tables once.
One database may hold the history and tune studies (Optuna's tables) together:
the history keeps to its tables and its own version table.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..database_url import driver_missing, first_line, resolved, shown
from ..errors import UsageError

# `--db` when it is not given: this variable, else this file in the current folder.
ENVIRONMENT = "CUBINRUN_HISTORY_DB"
DEFAULT_FILE = "cubinrun-history.sqlite"
# How long a writer waits for another's lock before giving up, in seconds.
BUSY_TIMEOUT_S = 120
# The execution option that marks a writing transaction.
_WRITE = "cubinrun_history_write"
# The history's own Alembic version table: Alembic's default, alembic_version,
# is also where Optuna's storage keeps its revision, and one database may hold both.
VERSION_TABLE = "cubinrun_history_version"
SHARED_VERSION_TABLE = "alembic_version"
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
    from sqlalchemy.engine import URL
    # built, not pasted: a ? or # in the path is the file's name, not a query
    return URL.create("sqlite", database=str(path.resolve())).render_as_string(
        hide_password=False)


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
        engine = sa.create_engine(resolved(url, "--db"), **_options(url))
    except (sa.exc.ArgumentError, ValueError) as exc:
        raise UsageError(f"--db {shown(url)}: not a database URL "
                         f"({first_line(exc, url)})") from None
    except ImportError as exc:
        raise driver_missing(url, "--db", exc) from None
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
    from alembic.script import ScriptDirectory
    config = Config()
    # Python files, shipped as the package's own (setuptools finds the folder
    # as a namespace package); .ci/wheel's suite migrates from the wheel.
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    head = ScriptDirectory.from_config(config).get_current_head()
    with engine.connect() as connection:
        if _revision(connection) == head:
            return
    with writing(engine).begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        _adopt_shared_version(connection, config)
        current = _revision(connection)
        if current is not None and current != head and not _known(config, current):
            raise UsageError(f"--db {shown(str(engine.url))}: its schema ({current}) is newer "
                             "than this cubinrun's; upgrade cubinrun")
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def _revision(connection) -> str | None:
    from alembic.runtime.migration import MigrationContext
    return MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE}
                                      ).get_current_revision()


def _adopt_shared_version(connection, config) -> None:
    """A store made before the history had its own version table kept its
    revision in Alembic's default table, `alembic_version`, which Optuna's
    storage keeps its own in: a revision of ours found there moves into ours,
    and the default table is left to Optuna (dropped once empty), so a tune
    can share the database."""
    import sqlalchemy as sa
    tables = set(sa.inspect(connection).get_table_names())
    if VERSION_TABLE in tables or SHARED_VERSION_TABLE not in tables \
            or not {"series", "runs"} <= tables:
        return
    shared = sa.table(SHARED_VERSION_TABLE, sa.column("version_num"))
    ours = [r for r in connection.execute(sa.select(shared.c.version_num)).scalars()
            if _known(config, r)]
    if not ours:                        # another's (Optuna's): not ours to touch
        return
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    context.stamp(ScriptDirectory.from_config(config), ours[0])
    connection.execute(sa.delete(shared).where(shared.c.version_num.in_(ours)))
    if connection.execute(sa.select(sa.func.count()).select_from(shared)).scalar_one() == 0:
        connection.execute(sa.text(f"DROP TABLE {SHARED_VERSION_TABLE}"))


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
        raise UsageError(f"--db {shown(self.url)}: {first_line(exc, self.url)}") from None
