"""`cubinrun launch SPEC --sanitize [TOOL]`: the spec's kernel under compute-sanitizer."""
from __future__ import annotations

import sys

from .common import console

MAX_ROWS = 20                   # groups of findings shown in the table


def launch_sanitized(spec_path, overrides, device, as_json, tool) -> None:
    from ..debug.sanitizer import find_sanitizer, run_sanitizer
    from ..debug.tools import cubinrun_command
    from ..errors import EXIT_CHECK_FAILED, EXIT_CUDA
    from ..report import print_json
    from ..spec import load_spec, parse_overrides
    spec = load_spec(spec_path, parse_overrides(overrides))    # spec errors end here, exit 2
    kernel = _kernel_name(spec)
    executable = find_sanitizer()
    run = run_sanitizer(tool, kernel, cubinrun_command(spec_path, overrides, device), executable)
    if not run.passed:
        code = EXIT_CHECK_FAILED
    elif run.report is not None or 0 < run.exit_code <= 5:
        code = run.exit_code        # cubinrun's own outcome: a failed check, a spec error...
    else:
        code = EXIT_CUDA if run.exit_code else 0
    if as_json:
        document = dict(run.report or {"kernel": kernel})
        document["sanitizer"] = run.to_json()
        print_json(document)
    else:
        render(run, console())
    if code and run.report is None and run.passed:
        # the program or the tool failed without a finding: say why, on stderr
        reason = run.program_error or _tool_error(run.log) or f"exit code {run.exit_code}"
        sys.stderr.write(f"error: under {tool}: {reason}\n")
    sys.exit(code)


def _kernel_name(spec) -> str | None:
    """The entry symbol, to limit the tool to it; read from the binary when the
    spec leaves it out (not for kernels compiled for the device: only one
    kernel is launched without timing anyway)."""
    if spec.kernel.name:
        return spec.kernel.name
    from ..prepare import needs_device_target, prepare
    return None if needs_device_target(spec) else prepare(spec).kernel_name


def _tool_error(log: str) -> str | None:
    lines = [line.removeprefix("=========").strip() for line in log.splitlines()
             if line.startswith("=========") and "Error" in line]
    return lines[-1] if lines else None


def render(run, out) -> None:
    from rich.table import Table

    from ..debug.sanitizer import group_findings
    out.print(f"[bold]{run.kernel or 'the kernel'}[/bold] under compute-sanitizer {run.tool}: "
              "first launch, untimed, 256 B padding, no guard bands")
    checks = ((run.report or {}).get("check") or {}).get("outputs") or {}
    for name, check in checks.items():
        verdict = "[green]pass[/green]" if check["passed"] else "[red]FAIL[/red]"
        out.print(f"check {name}: {verdict} ({check['mismatches']} / {check['count']} mismatches)")
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
            table.add_row(str(count), finding.kind, finding.source or "",
                          _dim(finding.thread), _dim(finding.block), str(finding.size or ""))
        out.print(table)
        if len(groups) > MAX_ROWS:
            out.print(f"  ... and {len(groups) - MAX_ROWS} more kinds (see --json)")
        for finding, _ in groups[:MAX_ROWS]:
            notes = [f"address {finding.address:#x}"] if finding.address is not None else []
            notes += [finding.detail] if finding.detail else []
            if notes:
                out.print(f"  {finding.kind} at {finding.source or '?'}: {'; '.join(notes)}")
    if run.program_error:
        out.print(f"cubinrun under the tool: {run.program_error}")


def _dim(values) -> str:
    return ",".join(map(str, values)) if values else ""
