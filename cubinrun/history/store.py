"""Reading and writing the history: results added in one transaction, the
series listed, old runs pruned, a branch's series read back in commit order.

Adding is idempotent: a run is named by a digest of its content and commit
(history/record.py), and a run already stored is skipped (counted, not an
error), so a CI job retried after a timeout adds nothing twice. Everything one
`add` brings is committed together or not at all.
"""
from __future__ import annotations

import datetime
import functools
import json
from dataclasses import dataclass, field
from typing import Iterable

import sqlalchemy as sa

from ..database_url import first_line, shown
from ..errors import UsageError
from .database import failures, writing
from .schema import runs, series


class _BadRow(Exception):
    """A stored value the history never writes (the database was changed by
    hand or by another program)."""


def _guarded(function):
    """A store function whose failures are one line naming --db: SQLAlchemy's
    (a damaged file, a lost server) and a row the history could not have written."""
    @functools.wraps(function)
    def guarded(engine, *args, **kwargs):
        url = engine.url.render_as_string(hide_password=False)
        with failures(url):
            try:
                return function(engine, *args, **kwargs)
            except _BadRow as exc:
                raise UsageError(f"--db {shown(url)}: {exc}") from None
    return guarded


def _rows(connection, query):
    """The query's rows; a value SQLAlchemy cannot read back as its column's
    type (a commit_date that is not a date) is a _BadRow."""
    rows = iter(connection.execute(query))
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except (ValueError, TypeError, OverflowError) as exc:
            raise _BadRow(f"a stored value is not what the history writes "
                          f"({first_line(exc, '')[:200]}); was the database changed outside "
                          "cubinrun?") from None
        yield row


def _point(row) -> dict:
    """A series' point, stored as a JSON object."""
    try:
        point = json.loads(row.point)
    except (TypeError, ValueError):
        point = None
    if not isinstance(point, dict):
        raise _BadRow(f"series {row.id}: its point is not a JSON object ({str(row.point)[:80]!r}); "
                      "was the database changed outside cubinrun?")
    return point


# A run's columns that a check reads as numbers (SQLite keeps whatever was put in).
_NUMBER_COLUMNS = ("median_us", "noise", "p10_us", "p90_us", "exit_code")


def _checked_run(row):
    """A run row whose numbers are numbers."""
    wrong = [c for c in _NUMBER_COLUMNS if not (
        getattr(row, c) is None or (isinstance(getattr(row, c), (int, float))
                                    and not isinstance(getattr(row, c), bool)))]
    if wrong:
        raise _BadRow(f"a run of series {row.id}: its {wrong[0]} is not what the history writes "
                      f"({str(getattr(row, wrong[0]))[:80]!r}); was the database changed "
                      "outside cubinrun?")
    return row


@dataclass
class Added:
    added: int = 0
    already: int = 0
    series: set = field(default_factory=set)


@_guarded
def add(engine, items: Iterable[tuple[dict, dict]]) -> Added:
    """Store (series, run) pairs in one transaction; runs already there are skipped."""
    done = Added()
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with writing(engine).begin() as connection:
        ids: dict[str, int] = {}
        for one_series, run in items:
            key = one_series["key"]
            if key not in ids:
                ids[key] = _series_id(connection, one_series)
            inserted = connection.execute(
                _insert(connection, runs).values(**run, series_id=ids[key], added_at=now)
                .on_conflict_do_nothing(index_elements=["digest"]))
            if inserted.rowcount:
                done.added += 1
                done.series.add(key)
            else:
                done.already += 1
    return done


def _insert(connection, table):
    """INSERT with ON CONFLICT, in the dialect's own spelling."""
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def _series_id(connection, values: dict) -> int:
    connection.execute(_insert(connection, series).values(**values)
                       .on_conflict_do_nothing(index_elements=["key"]))
    return connection.execute(sa.select(series.c.id).where(series.c.key == values["key"])
                              ).scalar_one()


@dataclass(frozen=True)
class Point:
    """One commit of a series: its runs' median (the median of their medians),
    noise and check, in commit order."""

    commit: str
    date: datetime.datetime
    median_us: float | None
    noise: float | None
    low_us: float | None
    high_us: float | None
    passed: bool | None       # every run's check passed (None: none was checked)
    failed: bool              # a run did not succeed (its exit code)
    runs: int


@dataclass
class Series:
    key: str
    spec: str | None
    kernel: str | None
    point: dict
    device: str
    points: list[Point]

    @property
    def name(self) -> str:
        name = self.spec or self.kernel or "?"
        if self.point:
            name += " [" + ", ".join(f"{k}={v}" for k, v in self.point.items()) + "]"
        return f"{name} on {self.device}"


@_guarded
def branches(engine) -> list[str]:
    with engine.connect() as connection:
        return [row.branch for row in _rows(connection, sa.select(runs.c.branch).distinct()
                                            .order_by(runs.c.branch))]


@_guarded
def read_series(engine, branch: str) -> list[Series]:
    """Every series with runs on `branch`, each as its points in commit order
    (by commit date; a commit's runs merged into one point)."""
    query = (sa.select(series, runs.c.commit, runs.c.commit_date, runs.c.median_us,
                       runs.c.noise, runs.c.p10_us, runs.c.p90_us, runs.c.check_passed,
                       runs.c.exit_code)
             .join(runs, runs.c.series_id == series.c.id)
             .where(runs.c.branch == branch)
             .order_by(series.c.id, runs.c.commit_date, runs.c.commit, runs.c.id))
    found: dict[int, Series] = {}
    grouped: dict[int, dict[str, list]] = {}
    with engine.connect() as connection:
        for row in _rows(connection, query):
            if row.id not in found:
                found[row.id] = Series(row.key, row.spec, row.kernel, _point(row), row.device, [])
                grouped[row.id] = {}
            grouped[row.id].setdefault(_checked_run(row).commit, []).append(row)
    for series_id, one in found.items():
        one.points = [_merged(rows) for rows in grouped[series_id].values()]
    return sorted(found.values(), key=lambda s: s.name)


def _merged(rows: list) -> Point:
    import statistics
    # a run that failed keeps its place (marked), not its time
    timed = [r for r in rows if r.median_us and r.exit_code == 0]
    medians = [r.median_us for r in timed]
    noises = [r.noise for r in timed if r.noise is not None]
    median = statistics.median(medians) if medians else None
    # several runs of one commit: their noise shrinks as a mean's would
    noise = (statistics.median(noises) / len(noises) ** 0.5) if noises else None
    low, high = _interval(timed, median, noise)
    checked = [r.check_passed for r in rows if r.check_passed is not None]
    return Point(rows[0].commit, rows[0].commit_date, median, noise, low, high,
                 all(checked) if checked else None, any(r.exit_code for r in rows), len(rows))


def _interval(rows: list, median: float | None, noise: float | None):
    """The median's 95% interval from its noise, else the runs' p10-p90."""
    if median is None:
        return None, None
    if noise is not None:
        return median * (1 - 1.96 * noise), median * (1 + 1.96 * noise)
    lows = [r.p10_us for r in rows if r.p10_us is not None]
    highs = [r.p90_us for r in rows if r.p90_us is not None]
    return (min(lows) if lows else None), (max(highs) if highs else None)


@_guarded
def listing(engine) -> list[dict]:
    """Each series with its count of runs, commits and its newest run's date."""
    query = (sa.select(series.c.id, series.c.spec, series.c.kernel, series.c.point,
                       series.c.device,
                       sa.func.count(runs.c.id).label("runs"),
                       sa.func.count(sa.distinct(runs.c.commit)).label("commits"),
                       sa.func.max(runs.c.commit_date).label("newest"))
             .join(runs, runs.c.series_id == series.c.id)
             .group_by(series.c.id).order_by(series.c.spec, series.c.kernel, series.c.point))
    with engine.connect() as connection:
        return [{"spec": r.spec, "kernel": r.kernel, "point": _point(r),
                 "device": r.device, "runs": r.runs, "commits": r.commits,
                 "newest": r.newest.isoformat()} for r in _rows(connection, query)]


@_guarded
def prune(engine, before: datetime.datetime, branch: str | None) -> tuple[int, int]:
    """Remove runs of commits dated before `before` (of one branch, or all),
    then the series left without runs; (runs, series) removed."""
    with writing(engine).begin() as connection:
        condition = runs.c.commit_date < before
        if branch is not None:
            condition = condition & (runs.c.branch == branch)
        removed = connection.execute(sa.delete(runs).where(condition)).rowcount
        empty = ~sa.exists().where(runs.c.series_id == series.c.id)
        gone = connection.execute(sa.delete(series).where(empty)).rowcount
    return removed, gone
