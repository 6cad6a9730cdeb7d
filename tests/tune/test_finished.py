"""A resumed tune with nothing left to measure reads its SQLite storage with
sqlite3 alone (cubinrun/tune/finished.py): the same evaluations, in the same
order, as Optuna's read of a storage the normal path wrote; None (the normal
path) whenever anything is left to do; and, as a process, no import of Optuna
or SQLAlchemy."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import tunelandscape
from support.repo import PACKAGE_PARENT
from support.cli import run as run_cli

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")

from cubinrun.tune import store  # noqa: E402
from cubinrun.tune.finished import read_finished, sqlite_file, stored_candidates  # noqa: E402
from cubinrun.tune.evaluate import OBJECTIVES  # noqa: E402
from cubinrun.tune.space import key, load_space  # noqa: E402

TIME = OBJECTIVES["time"]


@pytest.fixture
def tuned(tmp_path, capsys):
    """A replayed tune of the smooth landscape stored in SQLite by the normal
    path, stopped after 20 evaluations: (spec, results, url, the tune's JSON)."""
    spec, results = tunelandscape.write(tmp_path, "smooth")
    url = f"sqlite:///{tmp_path}/study.sqlite"
    code, out, _ = run_cli(capsys, "tune", str(spec), "--replay", str(results), "--storage",
                           url, "--max-evals", "20", "--seed", "3", "--json")
    assert code == 0
    return spec, results, url, json.loads(out)


def study_of(spec, results, url):
    """What the CLI names the study, and its input digests (a replay's: fixed)."""
    from cubinrun.runs.bundle import digest
    space = load_space(str(spec), {})
    extra = "replay:" + digest(Path(results).read_bytes())
    name = store.study_name("Fake H200", str(spec), {}, (), extra)
    return space, name, store.InputDigests(space, fixed=extra)


def test_the_sqlite_read_matches_optunas_read_of_the_same_study(tuned):
    spec, results, url, doc = tuned
    space, name, inputs_of = study_of(spec, results, url)
    finished = read_finished(url, name, "minimize", space, inputs_of, 20, store.CLAIM_S)
    assert finished is not None
    study = store.open_study(url, name, "minimize", None)
    by_optuna = store.read_stored(study, inputs_of, space).done
    assert [key(e.point) for e in finished.evaluations] == list(by_optuna)
    assert [e.to_json() for e in finished.evaluations] == \
        [e.to_json() for e in by_optuna.values()]
    assert [e["point"] for e in doc["evaluations"]] == [e.point for e in finished.evaluations]
    assert all(e.origin == "stored" for e in finished.evaluations)


def test_a_study_with_points_left_is_read_by_the_normal_path(tuned):
    spec, results, url, _ = tuned
    space, name, inputs_of = study_of(spec, results, url)
    # no budget, or a larger one: 44 of the 64 points are left to measure
    assert read_finished(url, name, "minimize", space, inputs_of, None, store.CLAIM_S) is None
    assert read_finished(url, name, "minimize", space, inputs_of, 21, store.CLAIM_S) is None
    # another study, another direction, other inputs: not this one's to report
    assert read_finished(url, name + "x", "minimize", space, inputs_of, 20,
                         store.CLAIM_S) is None
    assert read_finished(url, name, "maximize", space, inputs_of, 20, store.CLAIM_S) is None
    other = store.InputDigests(space, fixed="replay:other")
    assert read_finished(url, name, "minimize", space, other, 20, store.CLAIM_S) is None


def test_a_point_another_process_is_measuring_leaves_the_study_to_optuna(tuned):
    spec, results, url, _ = tuned
    space, name, inputs_of = study_of(spec, results, url)
    study = store.open_study(url, name, "minimize", None)
    study.ask(space.distributions())            # RUNNING now: another process's claim
    assert read_finished(url, name, "minimize", space, inputs_of, 20, store.CLAIM_S) is None
    # a claim older than CLAIM_S is a dead process's: ignored, as read_stored does
    assert read_finished(url, name, "minimize", space, inputs_of, 20, -1.0) is not None


def test_not_an_sqlite_study_is_left_to_optuna(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database")
    space = load_space(str(tunelandscape.write(tmp_path, "smooth")[0]), {})
    assert read_finished(f"sqlite:///{junk}", "s", "minimize", space, str, None, 1) is None
    assert sqlite_file(None) is None and sqlite_file("postgresql://u@h/db") is None
    assert sqlite_file(f"sqlite:///{tmp_path}/absent.sqlite") is None
    assert sqlite_file(f"sqlite:///{junk}?timeout=1") is None
    link = tmp_path / "link.sqlite"
    link.symlink_to(junk)
    assert sqlite_file(f"sqlite:///{link}") is None and sqlite_file(f"sqlite:///{junk}") == junk


def test_the_top_k_is_the_stored_retiming_or_for_a_replay_the_searchs(tuned):
    spec, results, url, doc = tuned
    space, name, inputs_of = study_of(spec, results, url)
    finished = read_finished(url, name, "minimize", space, inputs_of, 20, store.CLAIM_S)
    top = stored_candidates(finished, TIME, 5, replay=True)
    assert [c.to_json() for c in top] == doc["top"]
    # a GPU tune's top K not re-timed as it stands: it must be measured
    assert stored_candidates(finished, TIME, 5, replay=False) is None


def test_a_resumed_tune_imports_neither_optuna_nor_sqlalchemy(tuned, tmp_path):
    spec, results, url, first = tuned
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    command = [sys.executable, "-X", "importtime", "-m", "cubinrun", "tune", str(spec),
               "--replay", str(results), "--storage", url, "--max-evals", "20", "--seed", "3",
               "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "cubinrun" in imported and not imported & {"optuna", "sqlalchemy", "alembic"}
    doc = json.loads(done.stdout)
    assert doc["measured"] == 0 and doc["stored"] == 20
    assert [(e["point"], e["value"]) for e in doc["evaluations"]] == \
        [(e["point"], e["value"]) for e in first["evaluations"]]
    assert doc["best"]["point"] == first["best"]["point"] and doc["top"] == first["top"]
    assert doc["best"]["origin"] == "stored" and doc["seconds"]["read_storage"] > 0
