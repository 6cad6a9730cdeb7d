"""The report's pictures as inline SVG, drawn here rather than by a script in
the page: the pages then need nothing at all to show them (no network, no
JavaScript library, file:// works), and 1000 commits are a few hundred
kilobytes of markup that a browser draws at once."""
from __future__ import annotations

import math
from html import escape

from .check import Step
from .store import Point

_WIDTH, _HEIGHT, _MARGIN = 960, 320, (14, 16, 40, 64)     # top, right, bottom, left


def sparkline(points: list[Point], steps: list[Step], width: int = 160, height: int = 28) -> str:
    """The series' medians as one line, its newest point a dot, change points
    marked with a tick."""
    values = [p.median_us for p in points]
    timed = [v for v in values if v]
    if not timed:
        return ""
    low, high = _span(timed)
    x = lambda i: 1 + i * (width - 2) / max(len(values) - 1, 1)  # noqa: E731
    y = lambda v: height - 2 - (v - low) / (high - low) * (height - 4)  # noqa: E731
    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values) if v)
    commits = {p.commit: i for i, p in enumerate(points)}
    ticks = "".join(f'<line x1="{x(commits[s.commit]):.1f}" x2="{x(commits[s.commit]):.1f}" '
                    f'y1="0" y2="{height}" class="cp"/>' for s in steps if s.commit in commits)
    last = len(values) - 1
    dot = (f'<circle cx="{x(last):.1f}" cy="{y(values[last]):.1f}" r="2.5"/>'
           if values[last] else "")
    return (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{len(values)} commits">{ticks}'
            f'<polyline points="{line}"/>{dot}</svg>')


def chart(points: list[Point], steps: list[Step], commit_url: str | None) -> str:
    """Time over commits: the median, its interval as a band, failed checks as
    red crosses, change points as dashed lines with their change; each point's
    tooltip names its commit."""
    timed = [v for p in points for v in (p.median_us, p.low_us, p.high_us) if v]
    if not timed:
        return "<p>No timed runs.</p>"
    top, right, bottom, left = _MARGIN
    low, high = _span(timed)
    inner_w, inner_h = _WIDTH - left - right, _HEIGHT - top - bottom
    x = lambda i: left + (i + 0.5) * inner_w / len(points)  # noqa: E731
    y = lambda v: top + inner_h - (v - low) / (high - low) * inner_h  # noqa: E731
    parts = [_axes(low, high, y, points, x)]
    band = [(i, p) for i, p in enumerate(points) if p.low_us and p.high_us]
    if band:
        outline = [f"{x(i):.1f},{y(p.high_us):.1f}" for i, p in band]
        outline += [f"{x(i):.1f},{y(p.low_us):.1f}" for i, p in reversed(band)]
        parts.append(f'<polygon class="band" points="{" ".join(outline)}"/>')
    line = " ".join(f"{x(i):.1f},{y(p.median_us):.1f}" for i, p in enumerate(points) if p.median_us)
    parts.append(f'<polyline class="median" points="{line}"/>')
    index = {p.commit: i for i, p in enumerate(points)}
    for step in steps:
        at = x(index[step.commit] - 0.5)
        parts.append(f'<line class="cp" x1="{at:.1f}" x2="{at:.1f}" y1="{top}" '
                     f'y2="{top + inner_h}"/><text class="cp-label" x="{at + 3:.1f}" '
                     f'y="{top + 11}">{step.ratio - 1:+.1%}</text>')
    for i, p in enumerate(points):
        if not p.median_us:
            continue
        tip = escape(f"{p.commit[:12]}  {p.date:%Y-%m-%d}  {p.median_us:.4g} µs"
                     + ("  check FAILED" if p.passed is False or p.failed else ""))
        bad = p.passed is False or p.failed
        mark = (f'<path class="fail" d="M{x(i) - 4:.1f},{y(p.median_us) - 4:.1f}l8,8m0,-8l-8,8"/>'
                if bad else f'<circle cx="{x(i):.1f}" cy="{y(p.median_us):.1f}" r="2.2"/>')
        mark = f"<g><title>{tip}</title>{mark}</g>"
        if commit_url:
            mark = f'<a href="{escape(commit_url.replace("{commit}", p.commit))}">{mark}</a>'
        parts.append(mark)
    return (f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" '
            f'aria-label="time over {len(points)} commits">{"".join(parts)}</svg>')


def _axes(low: float, high: float, y, points: list[Point], x) -> str:
    top, right, bottom, left = _MARGIN
    parts = [f'<text class="unit" x="4" y="{top + 4}">µs</text>']
    for value in _ticks(low, high):
        parts.append(f'<line class="grid" x1="{left}" x2="{_WIDTH - right}" y1="{y(value):.1f}" '
                     f'y2="{y(value):.1f}"/><text class="tick" x="{left - 6}" '
                     f'y="{y(value) + 4:.1f}" text-anchor="end">{value:.4g}</text>')
    every = max(1, math.ceil(len(points) / 8))
    for i in range(0, len(points), every):
        parts.append(f'<text class="tick" x="{x(i):.1f}" y="{_HEIGHT - bottom + 16}" '
                     f'text-anchor="middle">{escape(points[i].commit[:7])}</text>')
    return "".join(parts)


def _span(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.01 or 1.0
    return low - pad, high + pad


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values between low and high for the y axis."""
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 5, 10) if raw <= step * m)
    first = math.ceil(low / step) * step
    return [first + k * step for k in range(int((high - first) / step) + 1)]
