"""`history report -o DIR`: a static site of the history, self-contained
(no server, no network, works from file://): `index.html` lists every series
with a sparkline and its latest verdict, `series/<key>.html` shows one
series' time over commits (charts.py) and a table of its commits, each
linked through the `--commit-url` template.

The index has one small inline script: a filter box over its rows (the page
works without it)."""
from __future__ import annotations

import os
from html import escape
from pathlib import Path

from ..errors import UsageError
from ..files import output_problem, write_output
from ..text import counted
from .charts import chart, sparkline
from .check import Verdict, series_order

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1b1f24;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px}
.meta{color:#57606a;margin-bottom:14px}
table{border-collapse:collapse}td,th{padding:3px 10px;border-bottom:1px solid #d8dee4;
text-align:left;vertical-align:middle}th{font-weight:600;background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.REGRESSION{color:#fff;background:#cf222e;border-radius:4px;padding:1px 6px}
.FAILING{color:#fff;background:#9a6700;border-radius:4px;padding:1px 6px}
.slower{color:#cf222e}.faster{color:#1a7f37}.steady,.untimed{color:#57606a}
svg.spark polyline{fill:none;stroke:#0969da;stroke-width:1.2}svg.spark circle{fill:#0969da}
svg line.cp{stroke:#cf222e;stroke-dasharray:3 3}
svg.chart{width:100%;max-width:960px;height:auto}
svg.chart .band{fill:#0969da;opacity:.15}
svg.chart .median{fill:none;stroke:#0969da;stroke-width:1.4}
svg.chart circle{fill:#0969da}svg.chart .fail{stroke:#cf222e;stroke-width:2;fill:none}
svg.chart .grid{stroke:#d8dee4}svg.chart text{font-size:11px;fill:#57606a}
svg.chart .cp-label{fill:#cf222e;font-weight:600}
input{font:inherit;padding:3px 6px;margin-bottom:10px;width:320px}
"""
_FILTER = """
document.getElementById('filter').addEventListener('input', function (event) {
  var words = event.target.value.toLowerCase();
  document.querySelectorAll('tbody tr').forEach(function (row) {
    row.hidden = row.textContent.toLowerCase().indexOf(words) < 0;
  });
});
"""
_INDEX, _FOLDER = "index.html", "series"


def check_commit_url(template: str | None) -> str | None:
    """A --commit-url template: http(s) with `{commit}` in it."""
    if template is None:
        return None
    if "{commit}" not in template or not template.startswith(("https://", "http://")):
        raise UsageError(f"--commit-url {template[:80]!r}: an http(s) URL with {{commit}} where "
                         "the commit goes (https://github.com/OWNER/REPO/commit/{commit})")
    return template


def page_name(verdict: Verdict) -> str:
    return f"{_FOLDER}/{verdict.series.key[:20]}.html"


def write_report(verdicts: list[Verdict], folder: Path, *, title: str, commit_url: str | None,
                 force: bool) -> Path:
    """Every page written into `folder` (made if missing); the index's path."""
    _prepare(folder, force)
    for verdict in verdicts:
        write_output(folder / page_name(verdict), _series_page(verdict, title, commit_url),
                     True)
    return write_output(folder / _INDEX, _index(verdicts, title), True)


def _prepare(folder: Path, force: bool) -> None:
    """The folder and its series/ folder are real folders (made here); an
    earlier report there is replaced only with `force`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _FOLDER).mkdir(exist_ok=True)
    except FileExistsError:
        raise UsageError(f"-o {folder}: a file, not a folder") from None
    except OSError as exc:
        raise UsageError(f"-o {folder}: cannot write there ({exc.strerror or exc})") from None
    if os.path.islink(folder / _FOLDER) or not (folder / _FOLDER).is_dir():
        raise UsageError(f"-o {folder}: {_FOLDER} is not a folder of its own (a link or a "
                         "file); remove it")
    if problem := output_problem(folder / _INDEX):
        raise UsageError(f"-o {folder}: {_INDEX} {problem}")
    if not force and os.path.lexists(folder / _INDEX):
        raise UsageError(f"-o {folder}: it holds a report ({_INDEX}); pass --force to "
                         "replace it")


def _page(title: str, body: str, script: str = "") -> str:
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            f"<title>{escape(title)}</title><link rel=\"icon\" href=\"data:,\">"
            f"<style>{_STYLE}</style></head><body>{body}"
            + (f"<script>{script}</script>" if script else "") + "</body></html>\n")


def _index(verdicts: list[Verdict], title: str) -> str:
    order = {"REGRESSION": 0, "FAILING": 1}
    rows = []
    for verdict in sorted(verdicts, key=lambda v: (order.get(v.word, 2), series_order(
            v.series.spec, v.series.kernel, v.series.point, v.series.device))):
        latest = verdict.latest
        change = (f"{verdict.steps[-1].ratio - 1:+.1%} at {escape(verdict.steps[-1].commit[:10])}"
                  if verdict.steps else "")
        rows.append(
            f"<tr><td><a href=\"{page_name(verdict)}\">{escape(verdict.series.name)}</a></td>"
            f"<td>{sparkline(verdict.series.points, verdict.steps)}</td>"
            f"<td class=\"num\">{_us(latest.median_us)}</td>"
            f"<td><span class=\"{verdict.word}\">{verdict.word}</span></td>"
            f"<td>{change}</td><td class=\"num\">{len(verdict.series.points)}</td></tr>")
    regressions = sum(1 for v in verdicts if v.regressions)
    body = (f"<h1>{escape(title)}</h1><p class=\"meta\">{len(verdicts)} series, "
            f"{regressions} with a regression now.</p>"
            "<input id=\"filter\" type=\"search\" placeholder=\"filter series\" "
            "aria-label=\"filter series\"><table><thead><tr><th>series</th><th>history</th>"
            "<th>latest µs</th><th>verdict</th><th>last change</th><th>commits</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")
    return _page(title, body, _FILTER)


def _series_page(verdict: Verdict, title: str, commit_url: str | None) -> str:
    series = verdict.series
    rows = []
    starts = {step.commit: step for step in verdict.steps}
    for point in reversed(series.points):
        commit = escape(point.commit[:12])
        if commit_url:
            link = escape(commit_url.replace("{commit}", point.commit))
            commit = f"<a href=\"{link}\">{commit}</a>"
        step = starts.get(point.commit)
        check = ("FAILED" if point.passed is False else "run failed" if point.failed
                 else "passed" if point.passed else "-")
        rows.append(f"<tr><td>{commit}</td><td>{point.date:%Y-%m-%d %H:%M}</td>"
                    f"<td class=\"num\">{_us(point.median_us)}</td>"
                    f"<td class=\"num\">{_interval(point.low_us, point.high_us)}</td>"
                    f"<td>{check}</td><td>{f'{step.ratio - 1:+.1%} here' if step else ''}</td>"
                    f"<td class=\"num\">{point.runs}</td></tr>")
    body = (f"<p><a href=\"../{_INDEX}\">{escape(title)}</a></p><h1>{escape(series.name)}</h1>"
            f"<p class=\"meta\">verdict: <span class=\"{verdict.word}\">{verdict.word}</span> · "
            f"{counted(len(series.points), 'commit')} · "
            f"{counted(len(verdict.steps), 'change point')}</p>"
            f"{chart(series.points, verdict.steps, commit_url)}"
            "<h2>Commits, newest first</h2><table><thead><tr><th>commit</th><th>date (UTC)</th>"
            "<th>median µs</th><th>95% interval</th><th>check</th><th>change</th><th>runs</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return _page(f"{series.name} · {title}", body)


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _interval(low: float | None, high: float | None) -> str:
    """low - high, or nothing where the commit has no interval (no timed run)."""
    return "" if low is None or high is None else f"{low:.4g} - {high:.4g}"
