"""Commands on saved results: `compare` a baseline with new results, and
`plot` a sweep."""
from __future__ import annotations

import itertools
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
    from ..results.compare import compare_results, parse_threshold
    from ..results.reader import DuplicateRuns, iter_results
    fraction = parse_threshold(threshold)
    # Both files stream: the baseline is indexed, NEW compared as it is read.
    # A bad line or a run twice in NEW is refused before anything is printed:
    # the output is held (in memory, then in a temporary file) until the last
    # comparison is made, then copied to stdout.
    runs = DuplicateRuns(new)
    tally = _Tally(compare_results(iter_results(baseline, slim=False), runs.each(iter_results(new)),
                                   fraction, ignore_device, baseline))
    first = tally.take(FIRST_ROWS)      # an error among these (the GPU models) prints nothing
    with _HeldOutput() as held:
        if as_json:
            _print_json_stream(fraction, first, tally, strict, held)
        else:
            _render(first, tally, strict, held)
    sys.exit(tally.code(strict))


class _HeldOutput:
    """A text file that takes the output while comparisons are still made, and
    is copied to stdout (then the lines given to `after`) once all are made;
    on an error nothing is printed. Memory up to HELD_IN_MEMORY, a temporary
    file beyond."""

    def __init__(self):
        import tempfile
        self.file = tempfile.SpooledTemporaryFile(HELD_IN_MEMORY, mode="w+", encoding="utf-8",
                                                  newline="")
        self.write = self.file.write
        self.lines: list[str] = []

    def after(self, line: str) -> None:
        self.lines.append(line)

    def __enter__(self) -> "_HeldOutput":
        return self

    def __exit__(self, kind, *_) -> None:
        import shutil
        with self.file:
            if kind is None:
                self.file.seek(0)
                shutil.copyfileobj(self.file, sys.stdout, 1 << 20)
                for line in self.lines:
                    console().print(line, markup=False)


HELD_IN_MEMORY = 16 << 20


# Comparisons gathered before any output: a table of at most this many rows is
# drawn by rich; a longer one streams as plain columns as wide as these rows.
FIRST_ROWS = 1000


class _Tally:
    """The comparisons as they come, counting verdicts and --strict's failures."""

    def __init__(self, comparisons):
        self.comparisons = iter(comparisons)
        self.counts: dict[str, int] = {}
        self.failures = 0

    def __iter__(self):
        from ..results.compare import strict_failure
        counts = self.counts
        for c in self.comparisons:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
            self.failures += strict_failure(c)
            yield c

    def take(self, n: int) -> list:
        return list(itertools.islice(iter(self), n))

    def code(self, strict: bool) -> int:
        from ..errors import EXIT_OK, EXIT_REGRESSION
        return EXIT_REGRESSION if self.counts.get("SLOWER") or (strict and self.failures) \
            else EXIT_OK


def _print_json_stream(fraction, first: list, tally: _Tally, strict: bool, out) -> None:
    """compare --json's document to `out`, one comparison at a time: each on
    one line (json's C encoder; with an indent it takes the slow Python one)."""
    import json

    from ..text import finite

    def indented(value, by: str) -> str:
        return json.dumps(finite(value), indent=2).replace("\n", "\n" + by)
    out.write('{\n  "threshold": ' + json.dumps(finite(fraction)) + ',\n  "comparisons": [')
    def entry(c) -> str:
        try:                            # finite() only where a value needs it (an inf bound)
            return json.dumps(c.to_json(), allow_nan=False)
        except ValueError:
            return json.dumps(finite(c.to_json()))

    comparisons = itertools.chain(first, tally)
    separator = "\n    "
    while chunk := list(itertools.islice(comparisons, 4096)):   # one write() per chunk
        out.write(separator + ",\n    ".join(map(entry, chunk)))
        separator = ",\n    "
    out.write("\n  ]" if first else "]")
    summary = {"verdicts": tally.counts, "exit_code": tally.code(strict)}
    if strict:
        summary["strict_failures"] = tally.failures
    out.write(',\n  "summary": ' + indented(summary, "  ") + "\n}\n")


def _render(first: list, tally: _Tally, strict: bool, held) -> None:
    """A table of the comparisons: rich's of the first rows when they are all,
    else plain columns streamed to `held`; then the counts."""
    from rich.text import Text

    from ..results.rows import number, percent, point_text
    from ..results.table import VERDICT_STYLE, draw
    energy = any(c.energy_ratio is not None for c in first)
    processes = any(c.processes and max(c.processes) > 1 for c in first)
    columns = [(name, "left" if name in ("spec", "point", "verdict", "energy") else "right")
               for name in ("spec", "point", "baseline µs", "new µs", "ratio", "95% interval",
                            "p", *(("processes", "spread") if processes else ()), "verdict",
                            *(("J/launch ratio", "energy") if energy else ()))]

    def cells(c, styled: bool = True) -> list:
        """A row: rich Text where styled (the first rows, a table), else plain
        strings (a long table's rest: a million rows streamed)."""
        interval = (f"{c.low:.3f}-{c.high:.3f}" if c.low is not None and c.high is not None
                    else "")
        if styled:
            verdict = Text(c.verdict, VERDICT_STYLE.get(c.verdict, ""))
            if c.reason:
                verdict.append(f" ({c.reason})", "dim")
            if strict and c.new_failed:
                verdict.append(" failed in NEW", "bold red")
        else:
            verdict = (c.verdict + (f" ({c.reason})" if c.reason else "")
                       + (" failed in NEW" if strict and c.new_failed else ""))
        row = [Text(c.spec or c.kernel or "?") if styled else c.spec or c.kernel or "?",
               Text(point_text(c.point)) if styled else point_text(c.point),
               number(c.baseline_us), number(c.new_us),
               "" if c.ratio is None else f"{c.ratio:.3f}", interval,
               "" if c.p_value is None else f"{c.p_value:.2g}"]
        if processes:
            row += ["/".join(map(str, c.processes or ())),
                    " / ".join("-" if s is None else percent(s) for s in c.spread or ())]
        row.append(verdict)
        if energy:
            row += ["" if c.energy_ratio is None else f"{c.energy_ratio:.3f}",
                    c.energy_verdict or ""]
        return row
    out = console()
    rows = [cells(c) for c in first]
    more = tally.take(1)
    if not more:
        draw(out, columns, rows)
    else:
        from ..text import plain_lines
        def plain(row) -> list[str]:
            return [getattr(cell, "plain", cell) for cell in row]
        later = (cells(c, styled=False) for c in itertools.chain(more, tally))
        lines = plain_lines([name for name, _ in columns], map(plain, rows), later)
        while chunk := list(itertools.islice(lines, 4096)):    # one write() per chunk:
            held.write("\n".join(chunk) + "\n")                # PYTHONUNBUFFERED=1 is common
    failed = f"; --strict: {tally.failures} missing or failed" if strict else ""
    held.after(", ".join(f"{n} {verdict}" for verdict, n in tally.counts.items()) + failed +
               f"; exit {tally.code(strict)}")


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
