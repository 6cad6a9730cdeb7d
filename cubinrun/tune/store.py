"""Where a tune keeps every evaluation: an Optuna study in an RDB storage
(SQLAlchemy), by default the SQLite file `<spec stem>.tune.sqlite` beside the
spec; any SQLAlchemy URL (`postgresql://...`) lets a team or several machines
share one study, and several processes may tune it at once. A replay is a
simulation: without `--storage` its study lives in memory (url None) and
leaves nothing behind, so each replay starts afresh.

The study is named by the GPU model, the spec (its text, `--set`, `--axis`)
and, for a replay, the replayed file; a stopped tune resumes it by name. Each
trial carries the point, the digest of the files its run reads (the binary,
headers, data: runs/bundle.py) and the evaluation, so a configuration already
measured on the same GPU model, binary and inputs is read back, not measured
again.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import UsageError
from .evaluate import Evaluation
from .space import key

STUDY_PREFIX = "cubinrun"
CLAIM_S = 600.0        # a RUNNING trial younger than this is another process's work in hand


def default_url(spec: str) -> str:
    path = Path(spec).with_suffix(".tune.sqlite")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise UsageError(f"{path}: the tune storage must be a regular file, not a link "
                         "(or pass --storage URL)")
    return "sqlite:///" + str(path.resolve())


IN_MEMORY = "memory (a replay keeps nothing without --storage)"


def is_new(url: str | None) -> bool:
    """Whether the storage surely holds no study yet: an SQLite file that does
    not exist (any other database may hold one). Read by hand, not by
    sqlalchemy's make_url: it is asked before the workers start, and importing
    sqlalchemy then would hold them up; a URL it does not read says "not new"."""
    prefix = "sqlite:///"
    if url is None:
        return True
    if not url.startswith(prefix) or "?" in url:
        return False
    database = url[len(prefix):]
    return database not in ("", ":memory:") and not Path(database).exists()


def shown_url(url: str | None) -> str:
    """The URL without its password, for reports."""
    if url is None:
        return IN_MEMORY
    if "@" not in url:          # no user or password in it: shown as given, sqlalchemy unread
        return url
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


def study_name(gpu: str, spec: str, overrides: dict[str, str], axis_texts: Iterable[str],
               extra: str = "") -> str:
    h = hashlib.blake2b(digest_size=12)
    h.update(Path(spec).read_bytes())
    h.update(json.dumps([sorted(overrides.items()), list(axis_texts), extra]).encode())
    return f"{STUDY_PREFIX}:{gpu}:{Path(spec).stem}:{h.hexdigest()}"


def open_study(url: str | None, name: str, direction: str, sampler):
    """The study `name` in `url`, created or resumed; one line when the storage fails."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            study = _open(url, name, direction, sampler)
            break
        except _Racing:
            if attempt + 1 == OPEN_ATTEMPTS:
                raise UsageError(f"--storage {shown_url(url)}: other processes kept it busy "
                                 "while this one created the study") from None
            time.sleep(0.2 * (attempt + 1))
    if study.direction.name.lower() != direction:
        raise UsageError(f"study {name} in {shown_url(url)} was made to "
                         f"{study.direction.name.lower()}: its objective differs")
    return study


OPEN_ATTEMPTS = 10


class _Racing(Exception):
    """Another process created the tables or the study at the same moment."""


def _open(url: str | None, name: str, direction: str, sampler):
    from .strategies import require_optuna
    optuna = require_optuna()
    try:
        storage = optuna.storages.InMemoryStorage() if url is None else \
            optuna.storages.RDBStorage(url, engine_kwargs=_engine_options(url))
        return optuna.create_study(storage=storage, study_name=name, direction=direction,
                                   sampler=sampler, load_if_exists=True)
    except ImportError as exc:
        raise UsageError(f"--storage {shown_url(url)}: its database driver is missing "
                         f"({exc.name or exc}); install it (PostgreSQL: psycopg2-binary)") from None
    except optuna.exceptions.DuplicatedStudyError:
        raise _Racing() from None
    except (ValueError, optuna.exceptions.OptunaError) as exc:
        raise UsageError(f"--storage {shown_url(url)}: {_first_line(exc)}") from None
    except Exception as exc:            # SQLAlchemy's: a refused connection, a bad file
        if not type(exc).__module__.startswith("sqlalchemy"):
            raise
        text = _first_line(exc)
        if any(word in text for word in ("already exists", "locked", "duplicate key", "UNIQUE")):
            raise _Racing() from None
        raise UsageError(f"--storage {shown_url(url)}: {text}") from None


def _engine_options(url: str) -> dict:
    """SQLite in WAL mode with normal syncing: a trial is several commits, and a
    full fsync each cost ~30 ms on a slow disk (more than a short kernel's run);
    WAL still lets several processes share the file. Other databases: a pool
    that checks its connections (a tune outlives idle timeouts)."""
    if not url.startswith("sqlite"):
        return {"pool_pre_ping": True}
    import sqlite3
    from sqlalchemy.engine import make_url
    database = make_url(url).database

    def connect():
        connection = sqlite3.connect(database, timeout=60, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    return {"creator": connect}


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass
class Stored:
    """What the study holds: measured configurations (by point key) and the
    points other processes are measuring now."""
    done: dict[str, Evaluation] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)


def read_stored(study, inputs_of, space) -> Stored:
    """The study's trials; `inputs_of(point)` is the digest the current files
    give that point: a measurement of other inputs does not count."""
    from optuna.trial import TrialState
    stored = Stored()
    now = time.time()
    names = {a.name for a in space.axes}
    for trial in study.get_trials(deepcopy=False):
        if trial.state == TrialState.RUNNING:     # asked: its parameters say which point
            started = trial.datetime_start.timestamp() if trial.datetime_start else 0
            if now - started < CLAIM_S and set(trial.params) == names:
                stored.claimed.add(key(space.point(trial.params)))
            continue
        attrs = _attrs(trial)
        if not attrs:
            continue
        if trial.state != TrialState.COMPLETE or attrs.get("origin") != "measured":
            continue
        if attrs["key"] in stored.done or attrs.get("inputs") != inputs_of(attrs["point"]):
            continue
        evaluation = Evaluation.from_json(attrs["evaluation"])
        evaluation.origin = "stored"
        stored.done[attrs["key"]] = evaluation
    return stored


def record(trial, point: dict, inputs: str, evaluation: Evaluation, origin: str,
           constraint: bool = False) -> None:
    """What a trial carries besides its value (before it is told): one user
    attribute, since each is a write (and a commit) of its own; with
    `constraint`, a failed configuration is also an infeasible trial (for the
    samplers that learn from that)."""
    trial.set_user_attr("cubinrun", {"key": key(point), "point": point, "inputs": inputs,
                                     "origin": origin, "evaluation": evaluation.to_json()})
    if constraint:
        trial.set_constraint("passed", -1.0 if evaluation.ok else 1.0)


def measured_with(trial) -> str | None:
    """The inputs digest a told trial was measured with (None: not a measurement)."""
    attrs = _attrs(trial)
    return attrs.get("inputs") if attrs.get("origin") == "measured" else None


def _attrs(trial) -> dict:
    attrs = trial.user_attrs.get("cubinrun")
    return attrs if isinstance(attrs, dict) and "key" in attrs else {}


def retimed(study) -> dict[str, Any]:
    return study.user_attrs.get("retime") or {}


def save_retimed(study, document: dict[str, Any]) -> None:
    study.set_user_attr("retime", document)


class InputDigests:
    """The digest of the files a point's run reads, each file hashed once per
    (path, size, mtime)."""

    def __init__(self, space, fixed: str | None = None):
        self.space, self.fixed = space, fixed
        self._files: dict[tuple, str] = {}
        self._points: dict[str, str] = {}

    def __call__(self, point: dict) -> str:
        if self.fixed is not None:
            return self.fixed
        k = key(point)
        if k not in self._points:
            from ..runs.bundle import needed_files
            from ..runs.expand import RunTask
            task = RunTask(0, self.space.spec, dict(point), self.space.overrides_of(point))
            h = hashlib.blake2b(digest_size=16)
            for path in needed_files(task):
                h.update(str(path).encode() + b"\0" + self._file(path).encode())
            self._points[k] = h.hexdigest()
        return self._points[k]

    def _file(self, path: Path) -> str:
        stat = path.stat()
        stamp = (str(path), stat.st_size, stat.st_mtime_ns)
        if stamp not in self._files:
            h = hashlib.blake2b(digest_size=16)
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            self._files[stamp] = h.hexdigest()
        return self._files[stamp]
