"""`launch --dry-run`: every spec and point checked without a GPU.

One spec at one point keeps its plan on stdout (or its section-2 JSON) and
its error as one line. Several runs are a table (or `{"results", "summary"}`)
and the most severe exit code. Either way the result files of a launch are
written (SPEC section 3): each result has `status: "dry-run"` and no timing,
so a CI job on a machine without a GPU still publishes its report (a JUnit
test case passes when its spec and point check out). `--fail-fast` stops at
the first run that does not.
"""
from __future__ import annotations

import sys
import time

from .common import console


def dry_run(tasks, args) -> int:
    """Plan every task; the exit code (raises the error of a lone run)."""
    from ..results.writers import JsonLines, json_document, summarize, write_files
    from ..runs.outcome import most_severe
    from .report import print_json, render_plan
    started = time.perf_counter()
    device = _device(args)
    jsonl = JsonLines(args.jsonl, args.append) if args.jsonl else None
    outcomes = []
    try:
        for task in tasks:
            outcome = _plan(task, args, device)
            outcomes.append(outcome)
            if jsonl:
                jsonl.write(outcome.document)
            if outcome.record.exit_code and len(tasks) > 1:
                sys.stderr.write(outcome.record.error_line() + "\n")
            if outcome.record.exit_code and args.fail_fast:
                break
    finally:
        if jsonl:
            jsonl.close()
    documents = [o.document for o in outcomes]
    exit_code = most_severe(o.record.exit_code for o in outcomes)
    summary = summarize(documents, exit_code, len(tasks) - len(outcomes),
                        time.perf_counter() - started)
    write_files(documents, summary, args.csv, args.markdown, args.junit)
    single = outcomes[0] if len(tasks) == 1 else None
    if single and single.record.exception is not None:
        raise single.record.exception           # the error line exactly as before
    if args.jsonl == "-" or "-" in (args.csv, args.markdown, args.junit):
        pass                                    # stdout carries that file
    elif single and args.as_json:
        print_json(single.prepared.to_json())
    elif single:
        render_plan(single.prepared, console())
    elif args.as_json:
        print_json(json_document(documents, summary, single=False))
    else:
        _table(outcomes, summary)
    return exit_code


class _Outcome:
    def __init__(self, record, document: dict, prepared=None):
        self.record, self.document, self.prepared = record, document, prepared


def _plan(task, args, device) -> _Outcome:
    """Everything a launch does without a GPU for one task; its result document."""
    from ..errors import CubinrunError
    from ..pipeline.prepare import dry_run as plan_and_prepare
    from ..runs.outcome import RunRecord
    started = time.perf_counter()
    try:
        if task.error is not None:
            raise task.error
        prepared = plan_and_prepare(task.spec, task.overrides, device, args.arch)
    except CubinrunError as error:
        record = RunRecord.failed(task, error, time.perf_counter() - started)
        return _Outcome(record, record.to_json())
    record = RunRecord(task, 0, result={"kernel": prepared.kernel_name,
                                        "plan": prepared.to_json()},
                       wall_s=time.perf_counter() - started)
    document = record.to_json()
    document["status"] = "dry-run"
    return _Outcome(record, document, prepared)


def _table(outcomes, summary: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ..results.table import not_shown, rows_to_show
    from ..results.writers import headline
    from ..runs.expand import point_text
    from ..text import dims
    table = Table(show_edge=False, pad_edge=False)
    for column in ("spec", "point", "kernel", "grid", "block", "status"):
        table.add_column(column)
    shown = rows_to_show(outcomes, lambda o: o.prepared is not None)
    for outcome in shown:
        task, prepared = outcome.record.task, outcome.prepared
        if prepared is None:
            cells = (task.spec, point_text(task.point), "", "", "", outcome.record.status)
        else:
            spec = prepared.plan.spec
            cells = (task.spec, point_text(task.point), prepared.kernel_name, dims(spec.grid),
                     dims(spec.block), "dry-run")
        table.add_row(*(escape(str(c)) for c in cells))
    out = console()
    out.print(table)
    if note := not_shown(len(shown), len(outcomes)):
        out.print(note)
    out.print(headline(summary))


def _device(args):
    """Device values for a dry run: --props FILE, else --arch's known GPU, else none."""
    from ..specfile.device_values import for_arch, from_props_file, unavailable
    if args.props:
        return from_props_file(args.props, args.device)
    return for_arch(args.arch) if args.arch else unavailable()
