"""Commands on saved results: `compare` a baseline with new results, and
`plot` a sweep."""
from __future__ import annotations

import sys

import click

from .common import complete_results, console, force_option, json_option


@click.command()
@click.argument("baseline", metavar="BASELINE", shell_complete=complete_results)
@click.argument("new", metavar="NEW", shell_complete=complete_results)
@click.option("--threshold", default="3%", show_default=True, metavar="PCT",
              help="The smallest change that counts as FASTER or SLOWER (3% or 0.03).")
@click.option("--ignore-device", is_flag=True, help="Compare results from different GPU models.")
@click.option("--strict", is_flag=True, help="Also exit 5 when a run is MISSING from NEW or "
              "failed there (an error, a failed check, no timing).")
@json_option
def compare(baseline, new, threshold, ignore_device, strict, as_json):
    """Compare two result files (launch --json or --jsonl): SAME, FASTER, SLOWER or
    AMBIGUOUS per run; exit 5 when any is SLOWER."""
    from ..errors import EXIT_OK, EXIT_REGRESSION
    from ..results.compare import compare_results, parse_threshold, strict_failures
    from ..results.reader import read_results, refuse_duplicates
    fraction = parse_threshold(threshold)
    sides = []
    for path in (baseline, new):
        results = read_results(path)
        refuse_duplicates(results, path)
        sides.append(results)
    comparisons = compare_results(*sides, fraction, ignore_device)
    counts: dict[str, int] = {}
    for c in comparisons:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    failures = len(strict_failures(comparisons)) if strict else 0
    code = EXIT_REGRESSION if counts.get("SLOWER") or failures else EXIT_OK
    if as_json:
        from .report import print_json
        summary = {"verdicts": counts, "exit_code": code}
        if strict:
            summary["strict_failures"] = failures
        print_json({"threshold": fraction, "comparisons": [c.to_json() for c in comparisons],
                    "summary": summary})
    else:
        _render(comparisons, counts, code, failures if strict else None)
    sys.exit(code)


def _render(comparisons, counts, code, failures: int | None) -> None:
    from rich.text import Text

    from ..results.rows import number, percent, point_text
    from ..results.table import VERDICT_STYLE, draw
    energy = any(c.energy_ratio is not None for c in comparisons)
    processes = any(c.processes and max(c.processes) > 1 for c in comparisons)
    columns = [(name, "left" if name in ("spec", "point", "verdict", "energy") else "right")
               for name in ("spec", "point", "baseline µs", "new µs", "ratio", "95% interval",
                            "p", *(("processes", "spread") if processes else ()), "verdict",
                            *(("J/launch ratio", "energy") if energy else ()))]
    rows = []
    for c in comparisons:
        interval = (f"{c.low:.3f}-{c.high:.3f}" if c.low is not None and c.high is not None
                    else "")
        verdict = Text(c.verdict, VERDICT_STYLE.get(c.verdict, ""))
        if c.reason:
            verdict.append(f" ({c.reason})", "dim")
        if failures is not None and c.new_failed:
            verdict.append(" failed in NEW", "bold red")
        cells = [Text(c.spec or c.kernel or "?"), Text(point_text(c.point)),
                 number(c.baseline_us), number(c.new_us),
                 "" if c.ratio is None else f"{c.ratio:.3f}", interval,
                 "" if c.p_value is None else f"{c.p_value:.2g}"]
        if processes:
            cells += ["/".join(map(str, c.processes or ())),
                      " / ".join("-" if s is None else percent(s) for s in c.spread or ())]
        cells.append(verdict)
        if energy:
            cells += ["" if c.energy_ratio is None else f"{c.energy_ratio:.3f}",
                      c.energy_verdict or ""]
        rows.append(cells)
    out = console()
    draw(out, columns, rows)
    strict = f"; --strict: {failures} missing or failed" if failures is not None else ""
    out.print(", ".join(f"{n} {verdict}" for verdict, n in counts.items()) + strict +
              f"; exit {code}")


@click.command()
@click.argument("results", metavar="RESULTS...", nargs=-1, required=True,
                shell_complete=complete_results)
@click.option("-o", "--output", required=True, metavar="PATH",
              help="The plot: PATH.png or PATH.svg.")
@click.option("--x", "x_var", metavar="VAR", help="The var on the x axis (default: the first "
              "swept var with several values).")
@force_option
def plot(results, output, x_var, force):
    """Plot time and throughput against a swept var from saved results (needs
    cubinrun[plot])."""
    from ..files import check_output
    from ..results.plot import check_path, plot_results, require_matplotlib
    from ..results.reader import read_results
    check_path(output)
    check_output(output, force)
    require_matplotlib()
    runs, sources = [], []
    for path, label in zip(results, _file_labels(results)):
        found = read_results(path)
        runs += found
        sources += [label] * len(found)
    plot_results(runs, output, x_var, force, "-o", sources if len(results) > 1 else None)
    sys.stderr.write(f"wrote {output}\n")


def _file_labels(paths) -> list[str]:
    """How each file is named in a plot's legend: its name without the suffix,
    or its whole path when two files share a name."""
    from pathlib import Path
    stems = [Path(p).stem for p in paths]
    return [stem if stems.count(stem) == 1 else str(p) for p, stem in zip(paths, stems)]
