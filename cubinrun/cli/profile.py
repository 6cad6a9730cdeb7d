"""`cubinrun profile SPEC [-- NCU_ARGS...]`: Nsight Compute on one launch of the kernel."""
from __future__ import annotations

import sys

import click

from .common import complete_specs, console, device_option, json_option, set_option


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False),
                shell_complete=complete_specs)
@click.argument("ncu_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- NCU_ARGS...]")
@set_option
@device_option
@json_option
@click.option("-o", "--output", "keep", metavar="PATH",
              help="Keep ncu's report as PATH (.ncu-rep is added when missing).")
@click.option("--l2", type=click.Choice(["cold", "hot"]), default=None,
              help="Flush the caches before the launch (cold) or not; default: the spec's "
              "bench.l2.")
def profile(spec_path, ncu_args, overrides, device, as_json, keep, l2):
    """Profile one launch of the spec's kernel with Nsight Compute (ncu).

    Prints the duration, DRAM throughput (% of peak), achieved occupancy,
    registers per thread and the limiting unit. Options after `--` go to ncu
    and replace cubinrun's own of the same name (e.g. `-- --clock-control base`).
    """
    from ..debug.profiler import find_ncu, run_profile
    from ..debug.tools import cubinrun_command
    from .report import print_json
    from .common import one_run
    from ..files import check_output, named
    named(keep, "-o")
    if keep:        # before ncu runs: a FIFO or a missing folder is said now, not after
        check_output(keep if keep.endswith(".ncu-rep") else keep + ".ncu-rep", True, "-o")
    plan, overrides = one_run(spec_path, overrides, device)
    spec = plan.spec
    kernel = _kernel_filter(plan)
    executable = find_ncu()
    run = run_profile(kernel, l2 or spec.bench.l2, cubinrun_command(spec_path, overrides, device),
                      list(ncu_args), keep, executable)
    if as_json:
        document = {"kernel": kernel, "profile": run.to_json()}
        if run.run_report is not None:
            document["check"] = run.run_report.get("check")
        print_json(document)
    else:
        render(run, console())
    sys.exit(run.exit_code if 0 <= run.exit_code <= 5 else 4)


def _kernel_filter(plan) -> str:
    """ncu's --kernel-name (matched against mangled symbols): the kernel's symbol
    when the binary can be read here, else a pattern for the symbols a C++
    name may become (`regex:`), since a source is compiled for the device."""
    from ..binary.names import is_mangled, symbol_pattern
    from ..errors import UsageError
    from ..pipeline.prepare import needs_device_target, prepare
    name = plan.spec.kernel.name
    if name and is_mangled(name):
        return name
    if not needs_device_target(plan.spec):
        return prepare(plan).kernel_name
    if name is None:
        raise UsageError("profile needs kernel.name for a source: or ptx: kernel (ncu filters "
                         "launches by name)")
    return "regex:" + symbol_pattern(name)


def _pct(value) -> str:
    return f"{value:.1f}%" if value is not None else "n/a"


def render(run, out) -> None:
    s = run.summary
    clocks = ("clocks as the GPU sets them (--clock-control none), as in cubinrun's timing"
              if run.clock_control == "none" else f"--clock-control {run.clock_control}")
    out.print(f"[bold]{s.kernel}[/bold] under Nsight Compute: one launch, L2 {run.l2}; {clocks}")
    duration = f"{s.duration_us:.2f} us" if s.duration_us is not None else "n/a"
    out.print(f"duration            {duration}")
    out.print(f"DRAM throughput     {_pct(s.dram_pct)} of peak  (memory {_pct(s.memory_pct)}, "
              f"compute {_pct(s.compute_pct)})")
    occupancy = f"{_pct(s.achieved_occupancy_pct)} achieved"
    if s.theoretical_occupancy_pct is not None:
        occupancy += f", {_pct(s.theoretical_occupancy_pct)} theoretical"
    if s.occupancy_limiter:
        occupancy += f", limited by {s.occupancy_limiter}"
    out.print(f"occupancy           {occupancy}")
    out.print(f"registers           {s.registers if s.registers is not None else 'n/a'} per thread")
    out.print(f"limiter             {s.limiter}")
    if s.advice:
        out.print(f"ncu: {s.advice}")
    if run.clock_control == "none":
        out.print("note: unlocked clocks follow power and temperature; `-- --clock-control base` "
                  "locks them for steadier, slower numbers")
    checks = ((run.run_report or {}).get("check") or {}).get("outputs") or {}
    for name, check in checks.items():
        out.print(f"check {name}: {'[green]pass[/green]' if check['passed'] else '[red]FAIL[/red]'}")
    if run.report_path:
        out.print(f"report {run.report_path}")
