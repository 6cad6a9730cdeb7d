"""Plots of a sweep: the median time (with the p10-p90 band shaded) and the
throughput against the swept var, the device's peak as a dashed line, one
series per spec and per value of the other swept vars. A pow2 axis (or one
whose values are all powers of two) is drawn on a log2 scale; times that span
more than 20x get a log scale too.

matplotlib is an optional extra (`pip install 'cubinrun[plot]'`), imported
only here, and drawn with its Agg/SVG canvases: no display is needed.
"""
from __future__ import annotations

import io
import math
from pathlib import Path

from ..errors import UsageError
from .rows import point_text, throughput

FORMATS = (".png", ".svg")


def require_matplotlib() -> None:
    """Say before any run that a plot cannot be drawn, not after the GPU work."""
    import importlib.util
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("plotting needs matplotlib, an optional extra: "
                         "pip install 'cubinrun[plot]'")


def check_path(path: str) -> None:
    if Path(path).suffix.lower() not in FORMATS:
        raise UsageError(f"{path}: a plot is written as .png or .svg")


def swept_var(results: list[dict], x: str | None) -> str:
    values: dict[str, set] = {}
    for result in results:
        for name, value in (result.get("point") or {}).items():
            values.setdefault(name, set()).add(value)
    if x is not None:
        if x not in values:
            raise UsageError(f"--x {x}: no result has it in its point "
                             f"(swept: {', '.join(values) or 'nothing'})")
        return x
    for name, seen in values.items():
        if len(seen) > 1:
            return name
    raise UsageError("nothing to plot against: the results come from no sweep "
                     "(use sweep: in the spec or --axis)")


def plot_results(results: list[dict], path: str, x: str | None = None,
                 force: bool = True, option: str = "--plot") -> None:
    """The plot written to `path` (.png or .svg) as files.py writes outputs:
    a regular file, never through a link, an existing one only with `force`."""
    check_path(path)
    require_matplotlib()
    from matplotlib.figure import Figure
    timed = [r for r in results if (r.get("timing") or {}).get("median_us") is not None]
    if not timed:
        raise UsageError("nothing to plot: no run has timing")
    var = swept_var(timed, x)
    series: dict[str, list[dict]] = {}
    for result in timed:
        if var not in (result.get("point") or {}):
            continue
        others = {k: v for k, v in result["point"].items() if k != var}
        label = Path(result.get("spec") or result.get("kernel") or "?").stem
        if others:
            label += f" [{point_text(others)}]"
        series.setdefault(label, []).append(result)

    figure = Figure(figsize=(11, 4.2), layout="constrained")
    time_axes, rate_axes = figure.subplots(1, 2)
    xs_all, peaks, units = [], {}, set()
    for label, runs in series.items():
        runs.sort(key=lambda r: r["point"][var])
        xs = [r["point"][var] for r in runs]
        xs_all += xs
        timing = [r["timing"] for r in runs]
        line, = time_axes.plot(xs, [t["median_us"] for t in timing], marker="o", label=label)
        if all(t.get("p10_us") is not None and t.get("p90_us") is not None for t in timing):
            time_axes.fill_between(xs, [t["p10_us"] for t in timing],
                                   [t["p90_us"] for t in timing], alpha=0.2,
                                   color=line.get_color(), linewidth=0)
        rates = [throughput(r) for r in runs]
        if any(value is not None for value, _, _ in rates):
            unit = next(u for v, u, _ in rates if v is not None)
            units.add(unit)
            rate_axes.plot(xs, [v if v is not None else math.nan for v, _, _ in rates],
                           marker="o", label=label, color=line.get_color())
            for run in runs:
                peak = _peak(run, unit)
                if peak:
                    name = (run.get("device") or {}).get("name") or "device"
                    peaks[(name, unit)] = peak
    pow2 = any(var in (r.get("pow2") or ()) for r in timed) or _all_powers_of_two(xs_all)
    for axes in (time_axes, rate_axes):
        axes.set_xlabel(var)
        axes.grid(True, which="both", alpha=0.3)
        if pow2:
            axes.set_xscale("log", base=2)
    medians = [r["timing"]["median_us"] for r in timed if r["timing"]["median_us"] > 0]
    if medians and max(medians) / min(medians) > 20:
        time_axes.set_yscale("log")
    time_axes.set_ylabel("median time (µs), p10-p90 shaded")
    time_axes.set_title("time")
    for (name, unit), peak in peaks.items():
        rate_axes.axhline(peak, linestyle="--", color="gray", label=f"{name} peak")
    rate_axes.set_ylabel(" / ".join(sorted(units)) or "throughput (no bench.bytes or flops)")
    rate_axes.set_title("throughput")
    for axes in (time_axes, rate_axes):
        if axes.get_legend_handles_labels()[0]:
            axes.legend(fontsize="small")
    from ..files import write_output
    image = io.BytesIO()        # rendered first: matplotlib would open the path itself
    figure.savefig(image, format=Path(path).suffix.lower()[1:], dpi=120)
    write_output(path, image.getvalue(), force, option)


def _peak(result: dict, unit: str) -> float | None:
    t = result.get("throughput") or {}
    return t.get("peak_gbps") if unit == "GB/s" else t.get("peak_fp32_tflops")


def _all_powers_of_two(values: list) -> bool:
    distinct = {v for v in values}
    return len(distinct) >= 3 and all(isinstance(v, int) and v > 0 and v & (v - 1) == 0
                                      for v in distinct)
