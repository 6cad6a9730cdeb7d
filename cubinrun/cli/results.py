"""Commands on saved results: `compare` a baseline with new results, and
`plot` a sweep."""
from __future__ import annotations

import sys

import click

from .common import console, force_option, json_option


@click.command()
@click.argument("baseline", metavar="BASELINE")
@click.argument("new", metavar="NEW")
@click.option("--threshold", default="3%", show_default=True, metavar="PCT",
              help="The smallest change that counts as FASTER or SLOWER (3% or 0.03).")
@click.option("--ignore-device", is_flag=True, help="Compare results from different GPU models.")
@json_option
def compare(baseline, new, threshold, ignore_device, as_json):
    """Compare two result files (launch --json or --jsonl): SAME, FASTER, SLOWER or
    AMBIGUOUS per run; exit 5 when any is SLOWER."""
    from ..errors import EXIT_OK, EXIT_REGRESSION
    from ..results.compare import compare_results, parse_threshold
    from ..results.reader import read_results
    fraction = parse_threshold(threshold)
    comparisons = compare_results(read_results(baseline), read_results(new), fraction,
                                  ignore_device)
    counts: dict[str, int] = {}
    for c in comparisons:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    code = EXIT_REGRESSION if counts.get("SLOWER") else EXIT_OK
    if as_json:
        from .report import print_json
        print_json({"threshold": fraction, "comparisons": [c.to_json() for c in comparisons],
                    "summary": {"verdicts": counts, "exit_code": code}})
    else:
        _render(comparisons, counts, code)
    sys.exit(code)


def _render(comparisons, counts, code) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ..results.rows import number, point_text
    from ..results.table import VERDICT_STYLE
    table = Table(show_edge=False, pad_edge=False)
    energy = any(c.energy_ratio is not None for c in comparisons)
    for column in ("spec", "point", "baseline µs", "new µs", "ratio", "95% interval", "p",
                   "verdict", *(("J/launch ratio", "energy") if energy else ())):
        table.add_column(column, justify="left" if column in ("spec", "point", "verdict",
                                                             "energy") else "right")
    for c in comparisons:
        interval = (f"{c.low:.3f}-{c.high:.3f}" if c.low is not None and c.high is not None
                    else "")
        style = VERDICT_STYLE.get(c.verdict, "")
        verdict = escape(c.verdict) + (f" [dim]({escape(c.reason)})[/dim]" if c.reason else "")
        cells = [escape(c.spec or c.kernel or "?"), escape(point_text(c.point)),
                 number(c.baseline_us), number(c.new_us),
                 "" if c.ratio is None else f"{c.ratio:.3f}", interval,
                 "" if c.p_value is None else f"{c.p_value:.2g}",
                 f"[{style}]{verdict}[/{style}]" if style else verdict]
        if energy:
            cells += ["" if c.energy_ratio is None else f"{c.energy_ratio:.3f}",
                      c.energy_verdict or ""]
        table.add_row(*cells)
    out = console()
    out.print(table)
    out.print(", ".join(f"{n} {verdict}" for verdict, n in counts.items()) + f"; exit {code}")


@click.command()
@click.argument("results", metavar="RESULTS...", nargs=-1, required=True)
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
    from ..results.reader import read_many
    check_path(output)
    check_output(output, force)
    require_matplotlib()
    plot_results(read_many(results), output, x_var, force, "-o")
    sys.stderr.write(f"wrote {output}\n")
