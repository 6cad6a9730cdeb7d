"""`launch --dry-run`: every spec and point checked without a GPU.

One spec at one point keeps its plan on stdout and its error as one line.
Several runs are a table and the most severe exit code. `--json` prints what
a launch's does, one run or many, success or failure: the result object (here
the plan's keys, `grid`, `block`, `params`, `binary`..., with `spec`, `point`,
`exit_code`, `status`, `error` and `wall_s`), or `{"results", "summary"}`.
Either way the result files of a launch are written (SPEC section 3) with
every result's plan, whatever stdout shows: each result has `status:
"dry-run"` and no timing, so a CI job on a machine without a GPU still
publishes its report (a JUnit test case passes when its spec and point check
out). Points a constraint
skips are `skipped`, points past a kernel's resource limit `invalid` (SPEC
section 5). `--fail-fast` stops at the first run that fails.
"""
from __future__ import annotations

import sys
import time

from .common import console


def dry_run(tasks, args) -> int:
    """Plan every task; the exit code (raises the error of a lone run)."""
    from ..binary.load import Binaries
    from ..results.writers import JsonLines, json_document, summarize, write_files
    from ..runs.outcome import most_severe
    from .report import print_json, render_plan
    started = time.perf_counter()
    device = _device(args)
    binaries = Binaries()               # a sweep's points read and parse their binary once
    single = len(tasks) == 1 and tasks[0].skipped is None
    jsonl = JsonLines(args.jsonl, args.append) if args.jsonl else None
    outcomes = []
    try:
        for task in tasks:
            outcome = _plan(task, args, device, binaries, with_plan=args.as_json or bool(jsonl))
            if jsonl:
                jsonl.write(outcome.document)
            if not args.as_json:
                # the plan is held only where stdout shows it: 100,000 of them held 700 MB
                outcome.document = outcome.without_plan()
            outcomes.append(outcome)
            if outcome.record.error and not single:
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
    if args.as_json:
        print_json(json_document(documents, summary, single=single))
    if single and outcomes[0].record.exception is not None:
        raise outcomes[0].record.exception      # the error line exactly as before
    if args.as_json or args.jsonl == "-" or "-" in (args.csv, args.markdown, args.junit):
        pass                                    # stdout carries that document or file
    elif single:
        render_plan(outcomes[0].prepared, console())
    else:
        _table(outcomes, exit_code, len(tasks) - len(outcomes))
    return exit_code


class _Outcome:
    def __init__(self, record, document: dict, prepared=None):
        self.record, self.document, self.prepared = record, document, prepared

    def without_plan(self) -> dict:
        """The document the summary and the table files read: its status fields and
        kernel names, not the plan."""
        if self.prepared is None:
            return self.document
        kept = {key: self.document[key] for key in _RESULT_KEYS if key in self.document}
        return {**self.record.to_json(), **kept}


_RESULT_KEYS = ("kernel", "kernel_mangled", "status")


def _plan(task, args, device, binaries, with_plan: bool) -> _Outcome:
    """Everything a launch does without a GPU for one task; its result document,
    with the plan's keys where a file or stdout will carry them."""
    from ..errors import CubinrunError
    from ..pipeline.prepare import dry_run as plan_and_prepare
    from ..runs.outcome import RunRecord
    if task.skipped is not None:
        record = RunRecord.not_run(task)
        return _Outcome(record, record.to_json())
    started = time.perf_counter()
    try:
        if task.error is not None:
            raise task.error
        prepared = plan_and_prepare(task.spec, task.overrides, device, args.arch, binaries.load)
    except CubinrunError as error:
        record = RunRecord.failed(task, error, time.perf_counter() - started)
        return _Outcome(record, record.to_json())
    record = RunRecord(task, 0, wall_s=time.perf_counter() - started)
    kernel = prepared.binary.kernel
    plan = prepared.to_json() if with_plan else {"kernel": kernel.cxx_name,
                                                 "kernel_mangled": kernel.name}
    document = {**plan, **record.to_json(), "status": "dry-run"}
    return _Outcome(record, document, prepared)


def _table(outcomes, exit_code: int, not_run: int) -> None:
    from rich.text import Text

    from ..results.table import draw
    from ..runs.expand import point_text
    from ..text import dims
    header = ("spec", "point", "kernel", "grid", "block", "status")
    rows = []
    for outcome in outcomes:
        record, prepared = outcome.record, outcome.prepared
        task = record.task
        if prepared is None:
            status = f"skipped: {task.skipped}" if record.outcome == "skipped" else record.status
            rows.append([Text(task.spec), Text(point_text(task.point)), "", "", "", Text(status)])
        else:
            spec = prepared.plan.spec
            rows.append([Text(task.spec), Text(point_text(task.point)),
                         Text(prepared.binary.kernel.cxx_name), dims(spec.grid), dims(spec.block),
                         "dry-run"])
    out = console()
    draw(out, [(name, "left") for name in header], rows)
    counts = {status: sum(1 for o in outcomes if o.document["status"] == status)
              for status in ("dry-run", "skipped", "invalid")}
    out.print(f"{len(outcomes)} runs planned, {counts['dry-run']} ok"
              + (f", {counts['skipped']} skipped by constraints" if counts["skipped"] else "")
              + (f", {counts['invalid']} invalid" if counts["invalid"] else "")
              + (f"; {not_run} not run (--fail-fast)" if not_run else "")
              + f"; exit {exit_code}")


def _device(args):
    """Device values for a dry run: --props FILE, else --arch's known GPU, else none."""
    from ..specfile.device_values import for_arch, from_props_file, unavailable
    if args.props:
        return from_props_file(args.props, args.device)
    return for_arch(args.arch) if args.arch else unavailable()
