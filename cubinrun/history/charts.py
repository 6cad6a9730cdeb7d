"""The report's pictures as inline SVG, drawn here rather than by a script in
the page: the pages then need nothing at all to show them (no network, no
JavaScript library, file:// works), and 1000 commits are a few hundred
kilobytes of markup that a browser draws at once."""
from __future__ import annotations

import math
from html import escape

from ..text import counted
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
    y = _Scale(timed, height - 2, 2).pixel
    x = lambda i: 1 + i * (width - 2) / max(len(values) - 1, 1)  # noqa: E731
    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values) if v)
    commits = {p.commit: i for i, p in enumerate(points)}
    ticks = "".join(f'<line x1="{x(commits[s.commit]):.1f}" x2="{x(commits[s.commit]):.1f}" '
                    f'y1="0" y2="{height}" class="cp"/>' for s in steps if s.commit in commits)
    last = len(values) - 1
    dot = (f'<circle cx="{x(last):.1f}" cy="{y(values[last]):.1f}" r="2.5"/>'
           if values[last] else "")
    return (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{counted(len(values), "commit")}">{ticks}'
            f'<polyline points="{line}"/>{dot}</svg>')


def chart(points: list[Point], steps: list[Step], commit_url: str | None) -> str:
    """Time over commits: the median, its interval as a band, failed checks as
    red crosses, change points as dashed lines with their change; each point's
    tooltip names its commit."""
    timed = [v for p in points for v in (p.median_us, p.low_us, p.high_us) if v]
    if not timed:
        return "<p>No timed runs.</p>"
    top, right, bottom, left = _MARGIN
    inner_w, inner_h = _WIDTH - left - right, _HEIGHT - top - bottom
    x = lambda i: left + (i + 0.5) * inner_w / len(points)  # noqa: E731
    scale = _Scale(timed, top + inner_h, top)
    y = scale.pixel
    parts = [_axes(scale, points, x)]
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
            f'aria-label="time over {counted(len(points), "commit")}">{"".join(parts)}</svg>')


def _axes(scale: "_Scale", points: list[Point], x) -> str:
    top, right, bottom, left = _MARGIN
    parts = [f'<text class="unit" x="4" y="{top + 4}">µs{" (log)" if scale.log else ""}</text>']
    for at, label in scale.ticks():
        parts.append(f'<line class="grid" x1="{left}" x2="{_WIDTH - right}" y1="{at:.1f}" '
                     f'y2="{at:.1f}"/><text class="tick" x="{left - 6}" '
                     f'y="{at + 4:.1f}" text-anchor="end">{label}</text>')
    every = max(1, math.ceil(len(points) / 8))
    for i in range(0, len(points), every):
        parts.append(f'<text class="tick" x="{x(i):.1f}" y="{_HEIGHT - bottom + 16}" '
                     f'text-anchor="middle">{escape(points[i].commit[:7])}</text>')
    return "".join(parts)


class _Scale:
    """The y axis of a chart: times (µs) to pixels between `bottom` and `top`.
    Any finite time must draw, from 5e-324 to 1.8e308: the arithmetic runs on
    times divided by the largest (a difference of two huge times overflows),
    and times more than LOG_RATIO apart take a log axis (a linear one would
    flatten all but the largest onto its floor). A value outside the axis (an
    interval's edge below zero, or past the largest float) is drawn at its
    edge."""

    LOG_RATIO = 1000.0
    TICKS = 5

    def __init__(self, values: list[float], bottom: float, top: float):
        shown = [v for v in values if math.isfinite(v) and v > 0] or [1.0]
        self.unit = max(shown)
        low, high = min(shown), self.unit
        self.log = high / low > self.LOG_RATIO
        if self.log:
            self.low, self.high = math.log10(low), math.log10(high)
        else:
            self.low, self.high = low / self.unit, 1.0
        pad = (self.high - self.low) * 0.08 or abs(self.high) * 0.01 or 1.0
        self.low, self.high = self.low - pad, self.high + pad
        self.bottom, self.top = bottom, top

    def _position(self, value: float) -> float:
        """Where `value` sits on the axis, in its own units (log10 or a
        fraction of the largest time)."""
        if self.log:
            return math.log10(value) if value > 0 else -math.inf
        return value / self.unit

    def pixel(self, value: float) -> float:
        """Where `value` is drawn: off the axis, at its nearer edge (max()
        keeps its first argument against a NaN)."""
        return self._pixel_at(min(self.high, max(self.low, self._position(value))))

    def ticks(self) -> list[tuple[float, str]]:
        """(pixel, label) of round values on the axis, none below zero:
        1-2-5 steps, of decades on a log axis; a label is shown once."""
        step = _round_step((self.high - self.low) / self.TICKS)
        if self.log:
            step = max(1, round(step))
            decades = range(math.ceil(self.low / step) * step, math.floor(self.high) + 1, step)
            return [(self._pixel_at(k), f"{10.0 ** k:g}" if abs(k) < 300 else f"1e{k}")
                    for k in decades]
        ticks, labels = [], set()
        for k in range(max(math.ceil(self.low / step), 0), math.floor(self.high / step) + 1):
            value = k * step * self.unit
            label = f"{value:.4g}"
            if math.isfinite(value) and label not in labels:
                labels.add(label)
                ticks.append((self._pixel_at(k * step), label))
        return ticks

    def _pixel_at(self, position: float) -> float:
        fraction = (position - self.low) / (self.high - self.low)
        return self.bottom + fraction * (self.top - self.bottom)


def _round_step(raw: float) -> float:
    """The round step (1, 2 or 5 times a power of ten) at least `raw`."""
    step = 10 ** math.floor(math.log10(raw))
    return step * next(m for m in (1, 2, 5, 10) if raw <= step * m)
