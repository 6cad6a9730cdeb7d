"""`cubinrun history`: results kept per commit in SQLite (idempotent, all or
nothing, 8 real processes at once), the check's exit code and its outputs,
list and prune. The detection itself: test_changes.py; PostgreSQL:
test_postgres.py; the report in a browser: test_report.py."""
from __future__ import annotations

import json
import sqlite3
import sys

import numpy as np
import pytest
from support.historydata import add_args, add_concurrently, result, sha, write_commits
from support.cli import one_error_line, run

pytest.importorskip("sqlalchemy", reason="cubinrun history needs the history extra")
pytest.importorskip("alembic", reason="cubinrun history needs the history extra")
pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")

SPECS = {"configs/small.yaml": 6.0, "configs/long.yaml": 400.0}


def added(capsys, *args):
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def fill(capsys, tmp_path, commits=40, steps=None):
    db = str(tmp_path / "h.sqlite")
    for i, path in enumerate(write_commits(tmp_path, commits, SPECS, steps)):
        added(capsys, *add_args(path, i, db))
    return db


def runs_in(db: str) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT count(*) FROM runs").fetchone()[0]


def test_adding_the_same_results_twice_adds_nothing(capsys, tmp_path):
    db = str(tmp_path / "h.sqlite")
    [path] = write_commits(tmp_path, 1, SPECS)
    first = added(capsys, *add_args(path, 0, db))
    again = added(capsys, *add_args(path, 0, db))
    assert (first["added"], first["already_stored"]) == (2, 0)
    assert (again["added"], again["already_stored"]) == (0, 2)
    # the same file as another commit is another measurement
    assert added(capsys, *add_args(path, 1, db))["added"] == 2
    assert runs_in(db) == 4


def test_a_bad_file_among_several_commits_nothing(capsys, tmp_path):
    db = str(tmp_path / "h.sqlite")
    [good] = write_commits(tmp_path, 1, SPECS)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(result("configs/x.yaml", 5.0)) + "\n{\"spec\": 3}\n")
    code, _, err = run(capsys, *add_args(good, 0, db)[:3], str(bad), *add_args(good, 0, db)[3:])
    assert code == 2 and one_error_line(err).startswith(f"error: {bad}:2: ")
    added(capsys, *add_args(good, 1, db))               # the database itself is fine
    assert runs_in(db) == 2


def test_eight_processes_adding_at_once_lose_nothing(tmp_path):
    files = write_commits(tmp_path, 8, SPECS)
    db = str(tmp_path / "h.sqlite")             # no file yet: the schema is made in the race
    done = add_concurrently(files, db)
    assert all(d.returncode == 0 for d in done), [d.stderr for d in done]
    assert sum(json.loads(d.stdout)["added"] for d in done) == 16
    assert runs_in(db) == 16
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("SELECT count(*) FROM series").fetchone()[0] == 2


def test_check_exits_5_for_a_new_regression_with_its_commit_range(capsys, tmp_path):
    db = fill(capsys, tmp_path, steps={"configs/long.yaml": (39, 1.06)})
    code, out, err = run(capsys, "history", "check", "--branch", "main", "--db", db, "--json")
    doc = json.loads(out)
    assert code == 5 and doc["regressions"] == 1, err
    [long] = [s for s in doc["series"] if s["spec"] == "configs/long.yaml"]
    [step] = long["regressions"]
    assert (step["previous_commit"], step["commit"]) == (sha(38), sha(39))
    assert 1.04 < step["ratio"] < 1.08
    [small] = [s for s in doc["series"] if s["spec"] == "configs/small.yaml"]
    assert small["verdict"] == "steady" and not small["changes"]


def test_an_older_regression_fails_only_a_check_since_before_it(capsys, tmp_path):
    db = fill(capsys, tmp_path, steps={"configs/long.yaml": (20, 1.10)})
    assert run(capsys, "history", "check", "--branch", "main", "--db", db)[0] == 0
    code, out, _ = run(capsys, "history", "check", "--branch", "main", "--db", db,
                       "--since", sha(15)[:6])
    assert code == 5 and sha(19)[:10] + ".." + sha(20)[:10] in out


def test_a_speedup_is_not_a_regression(capsys, tmp_path):
    db = fill(capsys, tmp_path, steps={"configs/long.yaml": (35, 0.9)})
    code, out, _ = run(capsys, "history", "check", "--branch", "main", "--db", db,
                       "--since", sha(30))
    assert code == 0 and "faster" in out


def test_the_markdown_summary_is_appended(capsys, tmp_path):
    db = fill(capsys, tmp_path, steps={"configs/long.yaml": (39, 1.2)})
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    code, _, _ = run(capsys, "history", "check", "--branch", "main", "--db", db,
                     "--markdown", summary,
                     "--commit-url", "https://example.org/c/{commit}")
    text = summary.read_text()
    assert code == 5 and text.startswith("earlier step\n### cubinrun history: main")
    assert f"](https://example.org/c/{sha(39)})" in text and "| REGRESSION |" in text
    assert "1 regression(s) beyond 3.0%" in text


def test_a_failing_check_is_shown(capsys, tmp_path):
    db = fill(capsys, tmp_path, commits=10)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(result("configs/small.yaml", 6.0, passed=False, exit_code=1)))
    added(capsys, *add_args(bad, 10, db))
    code, out, _ = run(capsys, "history", "check", "--branch", "main", "--db", db, "--json")
    [small] = [s for s in json.loads(out)["series"] if s["spec"] == "configs/small.yaml"]
    assert code == 0 and small["verdict"] == "FAILING" and small["latest_check_passed"] is False


def test_process_medians_are_kept_and_give_the_noise(capsys, tmp_path):
    db = str(tmp_path / "h.sqlite")
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(result("configs/small.yaml", 6.0, processes=4,
                                      process_medians_us=[5.8, 6.0, 6.1, 6.4],
                                      process_spread=0.1)))
    added(capsys, *add_args(path, 0, db))
    with sqlite3.connect(db) as connection:
        values, noise, processes = connection.execute(
            "SELECT values_us, noise, processes FROM runs").fetchone()
    assert json.loads(values) == [5.8, 6.0, 6.1, 6.4] and processes == 4
    # the spread (0.6 / 6.05) over the range of 4 normals, as a median's error of 4
    assert noise == pytest.approx(0.6 / 6.05 / 2.059 / 2 * 1.2533, rel=1e-3)


def test_list_and_prune(capsys, tmp_path):
    db = fill(capsys, tmp_path, commits=30)
    listed = added(capsys, "history", "list", "--db", db)["series"]
    assert sorted(s["spec"] for s in listed) == sorted(SPECS)
    assert all(s["runs"] == 30 and s["commits"] == 30 for s in listed)
    pruned = added(capsys, "history", "prune", "--db", db, "--before", "2026-01-01T00:10Z")
    assert pruned == {"removed_runs": 20, "removed_series": 0}
    assert runs_in(db) == 40
    assert added(capsys, "history", "prune", "--db", db, "--before", "2027-01-01")[
        "removed_series"] == 2


@pytest.mark.parametrize("args, message", [
    (["check", "--branch", "dev"], "--branch dev: the database holds no runs of it"),
    (["check", "--branch", "main", "--since", "ffff"], "--since ffff: no commit on main starts so"),
    (["check", "--branch", "main", "--threshold", "3"],
     "--threshold '3': write 3% for a percentage"),
    (["report", "-o", "out", "--commit-url", "javascript:{commit}"], "--commit-url"),
    (["prune", "--before", "yesterday"], "--before 'yesterday': not an ISO 8601 date"),
])
def test_bad_arguments_are_one_line(capsys, tmp_path, args, message):
    db = fill(capsys, tmp_path, commits=3)
    code, _, err = run(capsys, "history", args[0], "--db", db, *args[1:])
    assert code == 2 and message in one_error_line(err)


def test_a_file_that_is_not_a_database_is_one_line(capsys, tmp_path):
    db = tmp_path / "not.sqlite"
    db.write_text("hello, this is text\n" * 100)
    [path] = write_commits(tmp_path, 1, SPECS)
    code, _, err = run(capsys, *add_args(path, 0, str(db)))
    assert code == 2 and one_error_line(err).startswith(f"error: --db sqlite:///{db}: ")


def test_without_a_commit_outside_git_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    [path] = write_commits(tmp_path, 1, SPECS)
    code, _, err = run(capsys, "history", "add", path, "--db", tmp_path / "h.sqlite")
    assert code == 2 and "--commit: not given and this is not inside a git repository" in err


@pytest.mark.parametrize("timing, field", [
    ({"process_medians_us": [5.0, "fast"]}, "`timing.process_medians_us` should be a list"),
    ({"processes": 0}, "`timing.processes` should be a count"),
    ({"processes": True}, "`timing.processes` should be a count"),
    ({"process_spread": -0.1}, "`timing.process_spread` should be a number >= 0"),
])
def test_bad_process_fields_name_their_line(capsys, tmp_path, timing, field):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(result("configs/a.yaml", 5.0)) + "\n"
                    + json.dumps(result("configs/b.yaml", 5.0, **timing)) + "\n")
    db = tmp_path / "h.sqlite"
    code, _, err = run(capsys, *add_args(path, 0, str(db)))
    assert code == 2 and one_error_line(err).startswith(f"error: {path}:2: {field}")
    assert not db.exists()                  # checked before the database is opened


@pytest.mark.skipif(sys.platform == "win32", reason="a symlink needs a privilege on Windows")
def test_a_database_path_that_is_a_link_is_refused(capsys, tmp_path):
    (tmp_path / "real.sqlite").write_bytes(b"")
    (tmp_path / "link.sqlite").symlink_to(tmp_path / "real.sqlite")
    [path] = write_commits(tmp_path, 1, SPECS)
    code, _, err = run(capsys, *add_args(path, 0, str(tmp_path / "link.sqlite")))
    assert code == 2 and "link.sqlite: a link" in one_error_line(err)


def test_checking_an_empty_database_says_to_add_first(capsys, tmp_path):
    code, _, err = run(capsys, "history", "check", "--db", tmp_path / "new.sqlite")
    assert code == 2 and "holds no runs yet (cubinrun history add first)" in one_error_line(err)


def test_the_commit_branch_and_date_come_from_git(capsys, tmp_path, monkeypatch):
    import shutil
    import subprocess
    if shutil.which("git") is None:
        pytest.skip("no git")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "GIT_COMMITTER_DATE": "2026-03-04T05:06:07+02:00"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    git = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True,  # noqa: E731
                                       capture_output=True, text=True).stdout.strip()
    git("init", "-q", "-b", "perf")
    git("commit", "-q", "--allow-empty", "-m", "one")
    [path] = write_commits(tmp_path, 1, SPECS)
    monkeypatch.chdir(repo)
    doc = added(capsys, "history", "add", path, "--db", tmp_path / "h.sqlite")
    assert (doc["commit"], doc["branch"]) == (git("rev-parse", "HEAD"), "perf")
    with sqlite3.connect(tmp_path / "h.sqlite") as connection:
        assert connection.execute("SELECT DISTINCT commit_date FROM runs").fetchall() == [
            ("2026-03-04 03:06:07.000000",)]


def test_a_database_a_newer_cubinrun_migrated_is_refused(capsys, tmp_path):
    db = fill(capsys, tmp_path, commits=2)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE cubinrun_history_version SET version_num = '9999'")
    code, _, err = run(capsys, "history", "list", "--db", db)
    assert code == 2 and "its schema (9999) is newer than this cubinrun's" in one_error_line(err)


def test_a_noisy_step_fails_the_gate_once_at_the_first_commit_that_shows_it(capsys, tmp_path):
    # a 4.5% step at commit 37 of a kernel with 1% noise: too small to stand
    # out in its first three commits, certain with the fourth (commit 40)
    rng = np.random.default_rng(4)
    values = 100 * np.exp(rng.normal(0, 0.01, 42))
    values[37:] *= 1.045
    db = str(tmp_path / "h.sqlite")
    codes = []
    for commit, value in enumerate(values):
        path = tmp_path / f"c{commit}.jsonl"
        path.write_text(json.dumps(result("configs/noisy.yaml", float(value))))
        added(capsys, *add_args(path, commit, db))
        code, out, _ = run(capsys, "history", "check", "--branch", "main", "--db", db, "--json")
        codes.append(code)
        if code == 5:
            [step] = json.loads(out)["series"][0]["regressions"]
            assert (step["previous_commit"], step["commit"]) == (sha(36), sha(37))
    assert codes == [0] * 40 + [5, 0]
