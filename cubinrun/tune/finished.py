"""A resumed tune with nothing left to measure, read straight from its SQLite
file with the standard library's sqlite3: no Optuna, no SQLAlchemy.

Running the same `tune` command again over a study that is complete (every
valid point known, or `--max-evals` reached) and whose top K re-timing is
stored measures nothing: it only reports. Opening the study through Optuna
for that costs the imports of Optuna and SQLAlchemy, Alembic's schema check
and a read of every trial through the ORM (12 s for a 792-point study on this
2-core machine, under load); reading the same rows with one SQL query takes a
few milliseconds.

`read_finished` reads what store.read_stored reads (Optuna's RDB schema:
`studies`, `study_directions`, `trials`, `trial_user_attributes`,
`study_user_attributes`), with the same rules: only a trial COMPLETE and
`measured`, the first of its point, with the inputs digest the point's files
give now. It answers None, and the tune takes its usual path, whenever the
study might have anything left to do or the file is not what it expects: no
such study, another direction, a trial being measured by another process
(RUNNING and younger than store.CLAIM_S), a valid point not yet known, a top
K not re-timed as it stands now, any SQLite or JSON error. The file is opened
read-only, so a reader never changes it.
"""
from __future__ import annotations

import datetime
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from .evaluate import Evaluation, Objective
from .space import key

PREFIX = "sqlite:///"


@dataclass
class Finished:
    evaluations: list[Evaluation]       # the study's, in the order they were told
    retimed: dict                       # the stored re-timing of the top K ({} if none)


def sqlite_file(url: str | None) -> Path | None:
    """The database file of an `sqlite:///PATH` URL that names an existing
    regular file (no query, no link); None for any other URL."""
    if url is None or not url.startswith(PREFIX) or "?" in url:
        return None
    path = Path(url[len(PREFIX):])
    if not str(path) or str(path) == ":memory:" or path.is_symlink() or not path.is_file():
        return None
    return path


def read_finished(url: str | None, name: str, direction: str, space, inputs_of,
                  max_evals: int | None, claim_s: float) -> Finished | None:
    """The study `name`'s evaluations when a search over `space` would measure
    nothing more (see the module's docstring); None otherwise."""
    path = sqlite_file(url)
    if path is None:
        return None
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                                     timeout=5)
    except sqlite3.Error:
        return None
    try:
        return _read(connection, name, direction, space, inputs_of, max_evals, claim_s)
    except (sqlite3.Error, ValueError, KeyError, TypeError, AttributeError):
        return None         # not the schema or the rows expected: Optuna reads it
    finally:
        connection.close()


def _read(connection, name, direction, space, inputs_of, max_evals, claim_s):
    row = connection.execute("SELECT study_id FROM studies WHERE study_name = ?",
                             (name,)).fetchone()
    if row is None:
        return None
    study = row[0]
    directions = [d for (d,) in connection.execute(
        "SELECT direction FROM study_directions WHERE study_id = ?", (study,))]
    if [d.lower() for d in directions] != [direction]:
        return None
    trials = connection.execute(
        "SELECT t.state, t.datetime_start, a.value_json FROM trials t "
        "LEFT JOIN trial_user_attributes a ON a.trial_id = t.trial_id AND a.key = 'cubinrun' "
        "WHERE t.study_id = ? ORDER BY t.number", (study,))
    now = datetime.datetime.now()         # Optuna stores its local time, naive
    done: dict[str, Evaluation] = {}
    for state, started, value in trials:
        if state == "RUNNING":
            begun = datetime.datetime.fromisoformat(started) if started else None
            if begun is not None and (now - begun).total_seconds() < claim_s:
                return None         # another process is measuring a point
            continue
        if state != "COMPLETE" or value is None:
            continue
        attrs = json.loads(value)
        if not isinstance(attrs, dict) or "key" not in attrs or \
                attrs.get("origin") != "measured":
            continue
        if attrs["key"] in done or attrs.get("inputs") != inputs_of(attrs["point"]):
            continue
        evaluation = Evaluation.from_json(attrs["evaluation"])
        evaluation.origin = "stored"
        done[attrs["key"]] = evaluation
    complete = all(key(p) in done for p in space.valid)
    if not complete and (max_evals is None or len(done) < max_evals):
        return None             # the search has points left to measure
    row = connection.execute("SELECT value_json FROM study_user_attributes "
                             "WHERE study_id = ? AND key = 'retime'", (study,)).fetchone()
    retimed = json.loads(row[0]) if row else {}
    return Finished(list(done.values()), retimed if isinstance(retimed, dict) else {})


def stored_candidates(finished: Finished, objective: Objective, top_k: int, replay: bool):
    """The top K as the normal path would report them without measuring (its
    stored re-timing, or for a replay the search's values); None when the top K
    would have to be re-timed now."""
    from . import retime
    best = retime.top(finished.evaluations, objective, top_k)
    if not best:
        return []
    stored = retime.from_stored(finished.retimed, best, objective)
    if stored is not None:
        return stored
    if replay:
        return [retime.Candidate(e.point, e.value, [e.value], []) for e in best]
    return None
