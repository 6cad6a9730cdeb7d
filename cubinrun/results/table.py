"""The table at the end of a multi-run command (stdout): spec, point, median,
throughput, % of peak, check, status, and the baseline verdict when there is
one; then a one-line summary.

A table of many thousand rows takes rich minutes to draw and no one reads it:
past TABLE_ROWS rows, the unusual ones (errors, failures, verdicts that are
not SAME) are shown first and the rest counted; the result files and --json
hold every run."""
from __future__ import annotations

from .rows import device_labels, number, percent, row
from .writers import headline

VERDICT_STYLE = {"SAME": "", "FASTER": "green", "SLOWER": "bold red", "AMBIGUOUS": "yellow"}
TABLE_ROWS = 1000


def rows_to_show(items: list, usual) -> list:
    """Every item, or past TABLE_ROWS those that are not `usual(item)` first,
    then usual ones up to the limit, in their order."""
    if len(items) <= TABLE_ROWS:
        return items
    keep = [item for item in items if not usual(item)][:TABLE_ROWS]
    keep += [item for item in items if usual(item)][:TABLE_ROWS - len(keep)]
    chosen = {id(item) for item in keep}
    return [item for item in items if id(item) in chosen]


def not_shown(shown: int, total: int) -> str | None:
    """The line under a table that left rows out."""
    if shown == total:
        return None
    return f"{total - shown} more runs not shown (the result files and --json list every run)"


def render_summary(results: list[dict], summary: dict, console) -> None:
    from rich.markup import escape
    from rich.table import Table
    compared = any(r.get("compare") for r in results)
    table = Table(show_edge=False, pad_edge=False)
    widest = {key: max((len(row(r)[key]) for r in results), default=0) for key in ("spec", "point")}
    for column in ("spec", "point", "median µs", "throughput", "% peak", "check", "status"):
        table.add_column(column, justify="right" if column in ("median µs", "throughput",
                                                                "% peak") else "left",
                         min_width=min(widest.get(column, 0), 40) or None)
    if compared:
        table.add_column("vs baseline")
    gpus = device_labels(results)
    if gpus:
        table.add_column("gpu")
    shown = rows_to_show(results, lambda r: r.get("exit_code") == 0 and
                         (r.get("compare") or {}).get("verdict") in (None, "SAME"))
    chosen = {id(r) for r in shown}
    for position, result in enumerate(results):
        if id(result) not in chosen:
            continue
        flat = row(result)
        status = flat["status"]
        style = "" if status == "ok" else "dim" if status == "skipped" else \
            "yellow" if result.get("exit_code") == 0 else "red"
        cells = [escape(flat["spec"]), escape(flat["point"]), number(flat["median_us"]),
                 f"{number(flat['throughput'])} {flat['unit']}".strip(),
                 percent(flat["peak_fraction"]), flat["check"],
                 f"[{style}]{escape(status)}[/{style}]" if style else escape(status)]
        if compared:
            compare = result.get("compare") or {}
            verdict = compare.get("verdict", "")
            ratio = compare.get("ratio")
            text = verdict + (f" {ratio:.3f}x" if ratio is not None else "")
            vstyle = VERDICT_STYLE.get(verdict, "")
            cells.append(f"[{vstyle}]{text}[/{vstyle}]" if vstyle else text)
        if gpus:
            cells.append(escape(gpus[position]))
        table.add_row(*cells)
    console.print(table)
    if note := not_shown(len(shown), len(results)):
        console.print(note)
    console.print(headline(summary))
