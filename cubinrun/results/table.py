"""The tables at the end of a multi-run command (stdout): the runs (spec,
point, median, throughput, % of peak, check, status, joules per launch when
measured, and the baseline verdict when there is one; then a one-line
summary), and `draw`, which every table of runs goes through: rich up to
RICH_TABLE_ROWS rows, plain aligned columns past that, since rich spends about
2 ms measuring each row (minutes for a 100 000-point sweep)."""
from __future__ import annotations

from typing import Sequence

from .rows import any_processes, device_labels, number, percent, row, spread_text
from .writers import headline

VERDICT_STYLE = {"SAME": "", "FASTER": "green", "SLOWER": "bold red", "AMBIGUOUS": "yellow"}
RICH_TABLE_ROWS = 1000


def draw(console, columns: Sequence[tuple[str, str]], rows: list[list], min_widths=None) -> None:
    """`columns`: (name, justify); each cell a str or a rich Text (its style is
    dropped in plain columns), shown as text (never as rich markup) with its
    control characters escaped (errors.one_line: a name from a results file
    may hold a terminal's escape sequences)."""
    if len(rows) > RICH_TABLE_ROWS:
        from ..text import plain_table
        console.file.write(plain_table([name for name, _ in columns],
                                       [[getattr(c, "plain", c) for c in r] for r in rows]) + "\n")
        return
    from rich.table import Table
    table = Table(show_edge=False, pad_edge=False)
    for name, justify in columns:
        table.add_column(name, justify=justify, min_width=(min_widths or {}).get(name))
    for cells in rows:
        table.add_row(*map(_shown, cells))
    console.print(table)


def _shown(cell):
    """A cell as rich Text, its control characters escaped."""
    from rich.text import Text

    from ..errors import one_line
    if not isinstance(cell, Text):
        return Text(one_line(str(cell)))
    if not cell.plain.isprintable():
        cell = cell.copy()
        cell.plain = one_line(cell.plain)
    return cell


def render_summary(results: list[dict], summary: dict, console) -> None:
    from rich.text import Text
    compared = any(r.get("compare") for r in results)
    widest = {key: max((len(row(r)[key]) for r in results), default=0) for key in ("spec", "point")}
    columns = [(name, "right" if name in ("median µs", "throughput", "% peak") else "left")
               for name in ("spec", "point", "median µs", "throughput", "% peak", "check",
                            "status")]
    energy = any(r.get("energy") for r in results)
    if energy:
        columns.append(("J/launch", "right"))
    processes = any_processes(results)
    if processes:
        columns.append(("spread", "right"))
    if compared:
        columns.append(("vs baseline", "left"))
    gpus = device_labels(results)
    if gpus:
        columns.append(("gpu", "left"))
    rows = []
    for position, result in enumerate(results):
        flat = row(result)
        status = flat["status"]
        style = "" if status == "ok" else "dim" if status == "skipped" else \
            "yellow" if result.get("exit_code") == 0 else "red"
        if status == "skipped" and result.get("constraint"):    # as a dry run's table says it
            status = f"skipped: {result['constraint']}"
        cells = [Text(flat["spec"]), Text(flat["point"]), number(flat["median_us"]),
                 f"{number(flat['throughput'])} {flat['unit']}".strip(),
                 percent(flat["peak_fraction"]), flat["check"], Text(status, style)]
        if energy:
            cells.append(number(flat["j_per_launch"], 4))
        if processes:
            cells.append(Text(spread_text(flat), "yellow" if flat["too_noisy"] else ""))
        if compared:
            compare = result.get("compare") or {}
            verdict = compare.get("verdict", "")
            ratio = compare.get("ratio")
            cells.append(Text(verdict + (f" {ratio:.3f}x" if ratio is not None else ""),
                              VERDICT_STYLE.get(verdict, "")))
        if gpus:
            cells.append(Text(gpus[position]))
        rows.append(cells)
    draw(console, columns, rows,
         {key: min(width, 40) or None for key, width in widest.items()})
    console.print(headline(summary))
