"""Human output (rich tables) and machine output (one JSON document).

Only the CLI calls these; rich is imported by the functions that draw.
"""
from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from ..text import dims, finite, human_bytes

if TYPE_CHECKING:
    from ..pipeline.prepare import Prepared


def print_json(document: dict) -> None:
    """One JSON document on stdout; NaN and infinities become null (valid JSON)."""
    # One write: json.dump writes each token separately, a million writes for
    # a compare of 100 000 runs.
    sys.stdout.write(json.dumps(finite(document), indent=2) + "\n")


def render_plan(prepared: "Prepared", console) -> None:
    from rich.markup import escape
    from rich.table import Table
    plan = prepared.plan
    spec, launch = plan.spec, plan.spec.launch
    console.print(f"[bold]{escape(spec.kernel.name or '(the only kernel)')}[/bold]  "
                  f"{spec.kernel.kind} {escape(str(spec.kernel.path))}")
    grid = dims(spec.grid)
    if launch.num_ctas > 1:
        grid += f" programs ({dims(spec.launched_grid)} CTAs)"
    console.print(f"grid {grid}  block {dims(spec.block)}  shared {_shared(prepared)}"
                  + (f"  cluster {dims(plan.cluster)}" if plan.cluster else "")
                  + ("  cooperative" if launch.cooperative else "")
                  + ("  pdl" if launch.pdl else ""))
    if plan.ctas == 0:
        console.print("[yellow]the grid is empty: the launch will do nothing[/yellow]")

    params = Table(title="parameters", title_justify="left")
    for column in ("#", "name", "type", "value"):
        params.add_column(column, justify="right" if column == "#" else "left")
    for i, slot in enumerate(plan.slots):       # type names like struct[i32] are not markup
        params.add_row(str(i), *map(escape, (slot.leaf.path, slot.leaf.type, slot.describe())))
    for label, scratch in (("global_scratch", plan.global_scratch),
                           ("profile_scratch", plan.profile_scratch))[:plan.num_scratch]:
        params.add_row(str(len(params.rows)), label, "*u8",
                       f"{human_bytes(scratch.nbytes)} ({scratch.size} B x {plan.ctas} CTAs)")
    console.print(params if params.rows else "parameters: none")

    if spec.buffers:
        buffers = Table(title="buffers", title_justify="left")
        for column in ("name", "dtype", "shape", "bytes", "init", "save"):
            buffers.add_column(column, justify="right" if column == "bytes" else "left")
        for b in spec.buffers.values():
            shape = dims(b.shape) + (f" at +{b.offset}" if b.offset else "")
            buffers.add_row(escape(b.name), b.dtype.name, shape, human_bytes(b.nbytes),
                            b.init.describe(), str(b.save) if b.save else "")
        console.print(buffers)
    if spec.globals:
        table = Table(title="module globals (written before each launch)", title_justify="left")
        for column in ("name", "dtype", "shape", "bytes", "init"):
            table.add_column(column, justify="right" if column == "bytes" else "left")
        for g in spec.globals.values():
            table.add_row(escape(g.name), g.dtype.name, dims(g.shape) if g.shape else "scalar",
                          human_bytes(g.nbytes), escape(g.init.describe()))
        console.print(table)
    if spec.device_values:
        shown = ", ".join(f"{k}={v}" for k, v in spec.device_values.items())
        console.print(escape(f"device values {shown} (from {spec.device_source})"))
    for note in spec.notes:
        console.print(escape(f"note: {note}"))
    console.print(f"device memory {human_bytes(plan.device_bytes)}; "
                  f"checks: {escape(', '.join(c.name for c in spec.checks)) or 'none'}; "
                  f"launcher {escape(prepared.launcher.__file__)}")


def _shared(prepared: "Prepared") -> str:
    """The shared memory a block gets: the spec's dynamic bytes and the kernel's static."""
    dynamic, static = prepared.plan.spec.launch.shared, prepared.binary.kernel.shared_static
    if not static:
        return f"{dynamic} B"
    return f"{dynamic + static} B ({dynamic} dynamic + {static} static)"


def render_props(devices: list[dict], console) -> None:
    from rich.table import Table

    from ..gpu.props import table_rows
    for info in devices:
        table = Table(title=f"device {info['ordinal']}", title_justify="left", show_header=False)
        table.add_column("property")
        table.add_column("value")
        for label, text in table_rows(info):
            table.add_row(label, text)
        console.print(table)


def _error_text(value: float | None) -> str:
    """A check's max error; None when no pair of values was finite on both sides."""
    return "n/a" if value is None else f"{value:.3g}"


def render_result(result, console) -> None:
    """The launch report: what ran where, the check, the timing, the throughput."""
    from rich.markup import escape
    from rich.table import Table
    spec, kernel, device = result.spec, result.kernel, result.device
    name = kernel.get("cxx_name", kernel["name"])      # as C++ writes it
    console.print(f"[bold]{escape(name)}[/bold] on {device['name']} ({device['arch']})")
    geometry = (f"grid {dims(spec.grid)}  block {dims(spec.block)}  "
                f"shared {spec.launch.shared} B")
    if kernel.get("cluster"):
        geometry += f"  cluster {dims(kernel['cluster'])}"
    console.print(geometry)
    console.print(f"registers {kernel['registers']}  static shared {kernel['shared_static']} B  "
                  f"local {kernel['local']} B  max threads {kernel['max_threads']}")
    if not result.launched:
        console.print("[yellow]the grid is empty: nothing was launched[/yellow]")

    if result.checks:
        checks = Table(title="check", title_justify="left", show_edge=False, pad_edge=False)
        # short cells: the table fits 80 columns for a million-element output
        for column in ("output", "result", "max abs err", "max rel err", "mismatches",
                       "rtol / atol"):
            checks.add_column(column)
        for c in result.checks:
            tolerance = "exact" if c.exact else f"{c.rtol:g} / {c.atol:g}"
            checks.add_row(escape(c.name),               # a region key is not markup
                           "[green]pass[/green]" if c.passed else "[red]FAIL[/red]",
                           _error_text(c.max_abs_err), _error_text(c.max_rel_err),
                           f"{c.mismatches} / {c.count}", tolerance)
        console.print(checks)
        for c in result.checks:
            for index, got, expected in c.first_mismatches:
                console.print(escape(f"  {c.name}{list(index)}: got {got!r}, "
                                     f"expected {expected!r}"))

    for report in result.debug:             # guard bands, --repeat
        report.render(console)

    if result.timing is not None:
        t = result.timing
        console.print(f"time  median {t.median:.2f} us  min {t.min:.2f}  max {t.max:.2f}  "
                      f"mean {t.mean:.2f}  std {t.std:.2f}")
        console.print(f"      {timing_line(result)}")
        tp = result.throughput()
        if tp["gbps"] is not None:
            share = f" ({100 * tp['bandwidth_fraction']:.0f}% of {tp['peak_gbps']:,.0f} peak)" \
                if tp["bandwidth_fraction"] else ""
            console.print(f"bandwidth {tp['gbps']:,.1f} GB/s{share}")
        if tp["tflops"] is not None:
            share = f" ({100 * tp['fp32_fraction']:.0f}% of fp32 peak)" if tp["fp32_fraction"] else ""
            console.print(f"compute {tp['tflops']:,.2f} TFLOP/s{share}")
    if result.energy is not None:
        e = result.energy
        clock = f", SM clock {e.sm_clock_mhz:.0f} MHz" if e.sm_clock_mhz else ""
        console.print(f"energy {e.j_per_launch:.4g} J per launch  {e.watts:.0f} W average"
                      f"{clock} (NVML, {e.window_s:.2f} s of back-to-back launches)")
    for path in result.saved:
        console.print(f"saved {path}")


def timing_line(result) -> str:
    """How the samples were taken: count, timer, L2, what was subtracted or dropped."""
    timer = result.timer or "events"
    if timer == "cupti":
        how = "CUPTI kernel records"
    elif result.event_offset_us is not None:
        how = f"event pair offset {result.event_offset_us:.2f} us subtracted"
    else:
        how = "raw event pairs"
    if timer == "graph":
        how = f"CUDA graph of {result.launches_per_sample} launches per sample, {how}"
    parts = [f"{result.timing.samples} samples", f"L2 {result.l2}", how]
    if result.stopped == "noise" and result.noise is not None:
        parts.append(f"stopped at {100 * result.noise:.2f}% noise")
    if result.throttled_samples:
        parts.append(f"{result.throttled_samples} throttled samples dropped")
    return ", ".join(parts)
