"""`cubinrun launch --sanitize [TOOL] SPEC...`: the command line's optional
tool name, and the report of one run under compute-sanitizer (the runs
themselves: runs.sanitized)."""
from __future__ import annotations

from ..debug import SANITIZER_TOOLS as TOOLS

MAX_ROWS = 20                   # groups of findings shown in the table


def optional_tool(args: list[str]) -> list[str]:
    """`--sanitize` takes the next word as its tool only when it names one, so
    `--sanitize configs/x.yaml` is memcheck on that spec (an optional value
    would otherwise swallow the spec path)."""
    from .common import optional_value
    return optional_value(args, "--sanitize", TOOLS.__contains__, TOOLS[0])


def render(run, out) -> None:
    """One run under the tool (debug.sanitizer.SanitizerRun), for people."""
    from rich.markup import escape
    from rich.table import Table

    from ..debug.sanitizer import group_findings
    out.print(f"[bold]{escape(run.kernel or 'the kernel')}[/bold] under compute-sanitizer "
              f"{run.tool}: first launch, untimed, 256 B padding, no guard bands")
    checks = ((run.report or {}).get("check") or {}).get("outputs") or {}
    for name, check in checks.items():
        verdict = "[green]pass[/green]" if check["passed"] else "[red]FAIL[/red]"
        out.print(f"check {escape(name)}: {verdict} ({check['mismatches']} / {check['count']} "
                  "mismatches)")
    if run.passed:
        out.print(f"{run.tool}: [green]no errors[/green]")
    else:
        shown = len(run.findings)
        more = f", {shown} recorded" if shown != run.errors else ""
        out.print(f"{run.tool}: [red]FAIL[/red], {run.errors} error"
                  f"{'s' if run.errors != 1 else ''}{more}")
        # one row per kind of finding at one place; its first occurrence stands for all
        table = Table(show_edge=False, pad_edge=False)
        for column in ("n", "finding", "where", "thread", "block", "bytes"):
            table.add_column(column, justify="right" if column in ("n", "bytes") else "left")
        groups = group_findings(run.findings)
        for finding, count in groups[:MAX_ROWS]:
            table.add_row(str(count), escape(finding.kind), escape(finding.source or ""),
                          _dim(finding.thread), _dim(finding.block), str(finding.size or ""))
        out.print(table)
        if len(groups) > MAX_ROWS:
            out.print(f"  ... and {len(groups) - MAX_ROWS} more kinds (see --json)")
        for finding, _ in groups[:MAX_ROWS]:
            notes = [f"address {finding.address:#x}"] if finding.address is not None else []
            notes += [finding.detail] if finding.detail else []
            if notes:
                out.print(escape(f"  {finding.kind} at {finding.source or '?'}: "
                                 f"{'; '.join(notes)}"))
    if run.program_error:
        out.print(escape(f"cubinrun under the tool: {run.program_error}"))


def _dim(values) -> str:
    return ",".join(map(str, values)) if values else ""
