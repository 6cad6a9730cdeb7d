"""The table at the end of a multi-run command (stdout): spec, point, median,
throughput, % of peak, check, status, joules per launch when measured, and the
baseline verdict when there is one; then a one-line summary."""
from __future__ import annotations

from .rows import device_labels, number, percent, row
from .writers import headline

VERDICT_STYLE = {"SAME": "", "FASTER": "green", "SLOWER": "bold red", "AMBIGUOUS": "yellow"}


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
    energy = any(r.get("energy") for r in results)
    if energy:
        table.add_column("J/launch", justify="right")
    if compared:
        table.add_column("vs baseline")
    gpus = device_labels(results)
    if gpus:
        table.add_column("gpu")
    for position, result in enumerate(results):
        flat = row(result)
        status = flat["status"]
        style = "" if status == "ok" else "dim" if status == "skipped" else \
            "yellow" if result.get("exit_code") == 0 else "red"
        cells = [escape(flat["spec"]), escape(flat["point"]), number(flat["median_us"]),
                 f"{number(flat['throughput'])} {flat['unit']}".strip(),
                 percent(flat["peak_fraction"]), flat["check"],
                 f"[{style}]{escape(status)}[/{style}]" if style else escape(status)]
        if energy:
            cells.append(number(flat["j_per_launch"], 4))
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
    console.print(headline(summary))
