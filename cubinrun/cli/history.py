"""`cubinrun history add|check|report|list|prune`: every result kept per
commit in a database, change points found, a static report. The work is in
cubinrun/history/; SQLAlchemy, Alembic and ruptures (the history extra) are
imported only when a command runs."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..errors import EXIT_REGRESSION, UsageError, one_line
from .common import complete_results, existing, json_option

db_option = click.option(
    "--db", metavar="URL", help="The history: an SQLAlchemy URL (postgresql://...) or an "
    "SQLite file (default: $CUBINRUN_HISTORY_DB, else cubinrun-history.sqlite here).")
branch_option = click.option(
    "--branch", metavar="NAME", help="The branch (default: the checkout's, else CI's "
    "GITHUB_HEAD_REF / GITHUB_REF_NAME, else the database's only branch).")
commit_url_option = click.option(
    "--commit-url", metavar="TEMPLATE", help="Link each commit: a URL with {commit} in it "
    "(https://github.com/OWNER/REPO/commit/{commit}).")


@click.group("history")
def history() -> None:
    """A kernel's time over commits: add results per commit, find where it
    moved (check: exit 5 on a new regression), publish a static report."""


def _engine(db: str | None):
    from ..history.database import connect, resolve_url
    return connect(resolve_url(db))


@history.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(),
                shell_complete=complete_results)
@db_option
@click.option("--commit", metavar="SHA", help="The commit measured (default: git's HEAD).")
@click.option("--branch", metavar="NAME", help="The branch (default: the checkout's, else "
              "CI's GITHUB_HEAD_REF / GITHUB_REF_NAME / CI_COMMIT_REF_NAME).")
@click.option("--date", metavar="ISO", help="The commit's date (default: git's committer "
              "date of --commit); orders the commits.")
@json_option
def add(results, db, commit, branch, date, as_json) -> None:
    """Keep every run of RESULTS (launch --json or --jsonl files) with its
    commit. All or nothing; a run already kept is skipped (adding twice is a
    no-op)."""
    from ..history.record import commit_of, run_of, series_of
    from ..results.reader import read_results
    measured = commit_of(commit, branch, date, environ=dict(os.environ))
    items = []
    for path in results:
        for result in read_results(existing(path)):
            if result.get("status") == "dry-run":
                # nothing timed: kept, it would be a series that never moves
                raise UsageError(f"{result.where}: a `launch --dry-run` result, with no "
                                 "timing to keep; add the results of a real run")
            one_series = series_of(result)
            items.append((one_series, run_of(result, one_series["key"], measured,
                                              Path(path).name)))
    from ..history import database, store
    engine = _engine(db)
    with database.failures(str(engine.url)):
        done = store.add(engine, items)
    if as_json:
        from .report import print_json
        print_json({"commit": measured.sha, "branch": measured.branch, "added": done.added,
                    "already_stored": done.already, "series": len(done.series)})
        return
    print(f"history: {done.added} run(s) of {measured.sha[:10]} on {measured.branch} added"
          + (f", {done.already} already stored" if done.already else ""))


def _branch(engine, branch: str | None) -> str:
    """--branch, else the checkout's (or CI's), else the database's only one."""
    from ..history import store
    from ..history.record import commit_of
    known = store.branches(engine)
    if branch is None:
        try:
            branch = commit_of("HEAD", None, "1970-01-01", environ=dict(os.environ)).branch
        except UsageError:
            branch = known[0] if len(known) == 1 else None
    if not known:
        raise UsageError("--db: the database holds no runs yet (cubinrun history add first)")
    if branch is None:
        raise UsageError("--branch: not given, and the database holds "
                         f"{len(known)} branches ({', '.join(known[:5])}): pass --branch")
    if branch not in known:
        raise UsageError(f"--branch {branch}: the database holds no runs of it (it has "
                         f"{', '.join(known[:5])})")
    return branch


def _verdicts(engine, branch: str, since: str | None, threshold: float, match: str | None):
    """The series' verdicts from the commit `since` (default: the newest) on."""
    from ..history import store
    from ..history.check import judge_all, series_order
    # every series of the branch tells each commit's process shift, --match or not
    every = store.read_series(engine, branch)
    series = sorted((s for s in every if not match or match in s.name),
                    key=lambda s: series_order(s.spec, s.kernel, s.point, s.device))
    if not series:
        raise UsageError(f"--match {match}: no series on {branch} has it in its name")
    dates = {p.commit: p.date for s in series for p in s.points}
    if since is None:
        since = max(dates, key=lambda c: (dates[c], c))
    elif since not in dates:
        found = [c for c in dates if c.startswith(since)]
        if len(found) != 1:
            raise UsageError(f"--since {since}: {'no' if not found else 'more than one'} "
                             f"commit on {branch} starts so")
        since = found[0]
    return since, judge_all(every, dates[since], threshold, only=series)


match_option = click.option("--match", metavar="TEXT",
                            help="Only series whose name (spec, point, device) holds TEXT.")


@history.command()
@db_option
@branch_option
@click.option("--since", metavar="COMMIT", help="A regression counts when it begins at this "
              "commit or later, or first shows then (default: the branch's newest commit).")
@click.option("--threshold", default="3%", show_default=True, metavar="PCT",
              help="The smallest slowdown that counts.")
@match_option
@click.option("--markdown", "markdown_path", metavar="FILE", type=click.Path(),
              help="Append a Markdown summary to FILE (\"$GITHUB_STEP_SUMMARY\").")
@commit_url_option
@json_option
def check(db, branch, since, threshold, match, markdown_path, commit_url, as_json) -> None:
    """Find each series' change points; exit 5 when a slowdown beyond the
    threshold still holds and is new at --since: it begins there or later, or
    the commits from there on first made it certain."""
    from ..history.check import markdown
    from ..history.report import check_commit_url
    from ..text import parse_fraction
    fraction = parse_fraction(threshold, "--threshold")
    commit_url = check_commit_url(commit_url)
    engine = _engine(db)
    branch = _branch(engine, branch)
    since, verdicts = _verdicts(engine, branch, since, fraction, match)
    if markdown_path is not None:      # "" too: a usage error, not no summary
        _append(markdown_path, markdown(verdicts, branch, since, fraction, commit_url))
    regressions = [v for v in verdicts if v.regressions]
    if as_json:
        from .report import print_json
        print_json({"branch": branch, "since": since, "threshold": fraction,
                    "regressions": len(regressions),
                    "series": [v.to_json() for v in verdicts]})
    else:
        for verdict in verdicts:
            line = f"{verdict.word:<10} {one_line(verdict.series.name)}"
            for step in verdict.regressions:
                line += (f": {step.ratio - 1:+.1%} ({step.before_us:.4g} -> "
                         f"{step.after_us:.4g} us) in {one_line(step.previous[:10])}.."
                         f"{one_line(step.commit[:10])}")
            print(line)
        print(f"{len(regressions)} regression(s) beyond {fraction:.1%} from "
              f"{one_line(since[:10])} on, {len(verdicts)} series on {one_line(branch)}")
    if regressions:
        sys.exit(EXIT_REGRESSION)


def _append(path: str, text: str) -> None:
    """Append to a summary file (a regular file, never through a link)."""
    from ..files import append_output
    append_output(path, text, "--markdown")


@history.command()
@db_option
@branch_option
@click.option("-o", "--output", "folder", required=True, type=click.Path(), metavar="DIR",
              help="The folder of the report (made if missing).")
@click.option("--title", default="cubinrun history", show_default=True)
@match_option
@commit_url_option
@click.option("--force", is_flag=True, help="Replace a report already in DIR.")
def report(db, branch, folder, title, match, commit_url, force) -> None:
    """Write a static report: an index of every series (a sparkline, the
    latest verdict) and a page per series (time over commits, change points,
    failed checks)."""
    from ..files import named
    from ..history.report import check_commit_url, write_report
    named(folder, "-o")
    commit_url = check_commit_url(commit_url)
    engine = _engine(db)
    branch = _branch(engine, branch)
    _, verdicts = _verdicts(engine, branch, None, 0.03, match)
    index = write_report(verdicts, Path(folder), title=f"{title} · {branch}",
                         commit_url=commit_url, force=force)
    print(f"history: {len(verdicts)} series, report in {index}")


@history.command("list")
@db_option
@json_option
def list_series(db, as_json) -> None:
    """Every series with its runs, commits and newest commit date."""
    from ..history import store
    from ..history.check import series_order
    from ..text import counted
    rows = sorted(store.listing(_engine(db)), key=lambda row: series_order(
        row["spec"], row["kernel"], row["point"], row["device"]))
    if as_json:
        from .report import print_json
        print_json({"series": rows})
        return
    for row in rows:
        point = ", ".join(f"{k}={v}" for k, v in row["point"].items())
        name = (row["spec"] or row["kernel"] or "?") + (f" [{point}]" if point else "")
        print(f"{one_line(name)} on {one_line(row['device'])}: {counted(row['runs'], 'run')}, "
              f"{counted(row['commits'], 'commit')}, newest {row['newest'][:10]}")
    print(f"{len(rows)} series")


@history.command()
@db_option
@click.option("--before", required=True, metavar="ISO",
              help="Remove runs of commits dated before this (2026-01-01).")
@click.option("--branch", metavar="NAME", help="Only this branch's runs (default: all).")
@json_option
def prune(db, before, branch, as_json) -> None:
    """Remove old runs (and the series left without any), in one transaction."""
    from ..history import database, store
    from ..history.record import parse_date
    cutoff = parse_date(before, "--before")
    engine = _engine(db)
    with database.failures(str(engine.url)):
        runs, series = store.prune(engine, cutoff, branch)
    if as_json:
        from .report import print_json
        print_json({"removed_runs": runs, "removed_series": series})
        return
    print(f"history: {runs} run(s) and {series} series removed")
