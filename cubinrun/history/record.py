"""One result as the history keeps it: its series (spec, kernel, point,
device) and its run (the timing summary, its noise, the process medians or
samples, the check, the energy), with the commit it measured."""
from __future__ import annotations

import datetime
import hashlib
import json
import subprocess
from dataclasses import dataclass

from ..errors import UsageError
from ..limits import MAX_RESULT_SAMPLES
from ..results.reader import Located, point_key
from .noise import point_noise

# A commit names at most this many characters (a SHA-256 object name is 64).
_MAX_COMMIT = 64
# git allows longer branch names; none that long names a CI branch.
_MAX_BRANCH = 255


@dataclass(frozen=True)
class Commit:
    """What a run measured: the commit, its branch and its date (UTC)."""

    sha: str
    branch: str
    date: datetime.datetime


def series_of(result: Located) -> dict:
    """The series a result belongs to, with its key."""
    device = (result.get("device") or {}).get("name") or "unknown"
    values = {"spec": result.get("spec"), "kernel": result.get("kernel"),
              "point": point_key(result["point"]), "device": device}
    return {**values, "key": _digest(values)}


def run_of(result: Located, series_key: str, commit: Commit, source: str) -> dict:
    """A result's run row (without its series id), named by a digest of what
    it holds and the commit it measured."""
    timing = result.get("timing") or {}
    if problem := _process_fields_problem(timing):
        raise UsageError(f"{result.where}: {problem}")
    medians = timing.get("process_medians_us")
    samples = timing.get("samples_us")
    values = list(medians) if medians else (list(samples) if samples is not None else None)
    energy = result.get("energy") or {}
    check = result.get("check") or {}
    if not isinstance(check.get("passed"), (bool, type(None))):    # before any store is opened
        raise UsageError(f"{result.where}: `check.passed` should be true, false or null")
    row = {
        "commit": commit.sha, "branch": commit.branch, "source": source,
        "status": result.get("status"), "exit_code": result["exit_code"],
        "check_passed": check.get("passed"),
        "median_us": timing.get("median_us"), "min_us": timing.get("min_us"),
        "max_us": timing.get("max_us"), "p10_us": timing.get("p10_us"),
        "p90_us": timing.get("p90_us"), "noise": point_noise(timing),
        "processes": _processes(timing, medians),
        "values_us": json.dumps(values) if values is not None else None,
        "sm_clock_mhz": timing.get("sm_clock_mhz"),
        "energy_j": energy.get("j_per_launch"), "watts": energy.get("watts"),
    }
    # the same result of the same commit is the same run, whichever file it came in
    named = {k: v for k, v in row.items() if k != "source"}
    row["digest"] = _digest({**named, "series": series_key, "date": commit.date.isoformat()})
    row["commit_date"] = commit.date
    return row


def _process_fields_problem(timing: dict) -> str | None:
    """What is wrong with the fields a run's processes add (`processes`,
    `process_medians_us`, `process_spread`), or None; the reader checks the rest."""
    count = timing.get("processes")
    if count is not None and not (isinstance(count, int) and not isinstance(count, bool)
                                  and 1 <= count <= MAX_RESULT_SAMPLES):
        return f"`timing.processes` should be a count from 1 to {MAX_RESULT_SAMPLES}"
    medians = timing.get("process_medians_us")
    if medians is not None and not (
            isinstance(medians, list) and len(medians) <= MAX_RESULT_SAMPLES
            and all(_number(v) and v > 0 for v in medians)):
        return (f"`timing.process_medians_us` should be a list of at most "
                f"{MAX_RESULT_SAMPLES} times > 0")
    spread = timing.get("process_spread")
    if spread is not None and not (_number(spread) and spread >= 0):
        return "`timing.process_spread` should be a number >= 0"
    return None


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _processes(timing: dict, medians) -> int:
    count = timing.get("processes")
    if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
        return count
    return len(medians) if medians else 1


def _digest(values: dict) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()


def commit_of(sha: str | None, branch: str | None, date: str | None, *,
              environ: dict) -> Commit:
    """The commit the results measured: the flags where given, else the
    repository the command runs in (HEAD, its branch, its committer date),
    else CI's variables for the branch of a detached checkout."""
    sha = sha or _git("rev-parse", "HEAD")
    if not sha:
        raise UsageError("--commit: not given and this is not inside a git repository")
    if len(sha) > _MAX_COMMIT or not sha.strip() or any(c.isspace() for c in sha):
        raise UsageError(f"--commit {sha[:80]!r}: a commit name is one word of at most "
                         f"{_MAX_COMMIT} characters")
    if not branch:
        current = _git("rev-parse", "--abbrev-ref", "HEAD")
        branch = current if current and current != "HEAD" else (
            environ.get("GITHUB_HEAD_REF") or environ.get("GITHUB_REF_NAME")
            or environ.get("CI_COMMIT_REF_NAME"))
    if not branch:
        raise UsageError("--branch: not given, and the checkout is on no branch (a detached "
                         "HEAD): pass --branch NAME")
    if len(branch) > _MAX_BRANCH or not branch.isprintable():
        raise UsageError(f"--branch {branch[:80]!r}: a branch name is printable text of at "
                         f"most {_MAX_BRANCH} characters")
    return Commit(sha, branch, parse_date(date) if date else _commit_date(sha))


def parse_date(text: str, flag: str = "--date") -> datetime.datetime:
    """An ISO 8601 date or time as naive UTC (no zone means UTC)."""
    try:
        value = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag} {text[:80]!r}: not an ISO 8601 date (2026-12-04 or "
                         "2026-12-04T21:45:00+00:00)") from None
    if value.tzinfo is not None:
        try:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        except OverflowError:           # 9999-12-31T23:59:59-12:00 is in the year 10000 in UTC
            raise UsageError(f"{flag} {text[:80]!r}: beyond the dates Python holds "
                             "(0001-01-01 to 9999-12-31 UTC)") from None
    return value


def _commit_date(sha: str) -> datetime.datetime:
    text = _git("show", "-s", "--format=%cI", sha)
    if not text:
        raise UsageError(f"--date: not given, and git does not know the commit {sha[:80]}: "
                         "pass --date")
    return parse_date(text)


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
