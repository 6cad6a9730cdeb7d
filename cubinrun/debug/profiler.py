"""`cubinrun profile SPEC`: Nsight Compute (ncu) on exactly one launch of the kernel.

cubinrun runs itself (`launch SPEC --no-bench --no-guard --json`, which
launches the kernel exactly once) under ncu, filtered to the kernel's mangled
name with `--launch-skip 0 --launch-count 1`, collecting the SpeedOfLight,
Occupancy and LaunchStats sections into a report file. The report is read
back with `ncu --import FILE --csv --page details`: ncu's own messages go to
`--log-file` and cubinrun's JSON to stdout, so no stream mixes two programs.

Caches and clocks: `--cache-control all` (ncu flushes every cache before each
replay pass) for the spec's `l2: cold`, `none` for `hot`. `--clock-control
none` leaves the clocks as the GPU sets them, as cubinrun's own timing does,
so the two durations compare; ncu's default (`base`) locks them at the base
clock, which is steadier but slower than what the kernel gets in real use.
`-- --clock-control base` asks for that. Any option given after `--` takes
the place of cubinrun's own option of the same name.
"""
from __future__ import annotations

import csv
import io
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import CudaError, UsageError

EXECUTABLE = "ncu"
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats")
SATURATED = 60.0        # % of peak above which ncu's SOL analysis calls a unit the limiter
# cubinrun's options and their other spellings: one given after `--` replaces ours
_OWN_OPTIONS = {
    "--clock-control": ("--clock-control",),
    "--cache-control": ("--cache-control",),
    "--kernel-name-base": ("--kernel-name-base",),
    "--kernel-name": ("--kernel-name", "-k", "--kernel-regex"),
    "--launch-skip": ("--launch-skip", "-s"),
    "--launch-count": ("--launch-count", "-c"),
    "--log-file": ("--log-file",),
}
_REFUSED = ("-o", "--export", "--import", "-f", "--force-overwrite")
_TIME_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
               "msecond": 1e3, "s": 1e6, "second": 1e6}


def find_ncu() -> str:
    """ncu on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin; CudaError (exit 4) naming them."""
    from .tools import find_tool
    return find_tool(EXECUTABLE, "Nsight Compute")


def ncu_command(executable: str, kernel: str, l2: str, report: str, log: str,
                extra: Iterable[str], program: Iterable[str]) -> list[str]:
    extra = list(extra)
    given = {token.split("=", 1)[0] for token in extra if token.startswith("-")}
    refused = given & set(_REFUSED)
    if refused:
        raise UsageError(f"{sorted(refused)[0]} after --: use `cubinrun profile -o PATH` to keep "
                         "the report")
    own = [("--clock-control", "none"), ("--cache-control", "all" if l2 == "cold" else "none"),
           ("--kernel-name-base", "mangled"), ("--kernel-name", kernel),
           ("--launch-skip", "0"), ("--launch-count", "1"), ("--log-file", log)]
    command = [executable]
    for option, value in own:
        if not given & set(_OWN_OPTIONS[option]):
            command += [option, value]
    for section in SECTIONS:
        command += ["--section", section]
    return command + ["--export", report, "--force-overwrite", *extra, *program]


def import_command(executable: str, report: str) -> list[str]:
    return [executable, "--import", report, "--csv", "--page", "details"]


# ---------------------------------------------------------------- the details page

@dataclass(frozen=True)
class Metric:
    section: str
    name: str
    unit: str
    value: str                  # as ncu printed it ("13,375", "6.78", "PolicySpread")

    def number(self) -> float | None:
        try:
            return float(self.value.replace(",", ""))
        except ValueError:
            return None


@dataclass
class Profiled:
    """One profiled launch from `--page details --csv`."""
    kernel: str
    block: str
    grid: str
    device: str
    metrics: list[Metric] = field(default_factory=list)
    rules: dict[str, str] = field(default_factory=dict)      # rule name -> its description

    def get(self, section: str, name: str) -> Metric | None:
        for metric in self.metrics:
            if metric.section == section and metric.name == name:
                return metric
        return None

    def number(self, section: str, name: str) -> float | None:
        metric = self.get(section, name)
        return metric.number() if metric else None


def parse_details(text: str) -> list[Profiled]:
    """The CSV of `ncu --csv --page details`, one Profiled per profiled launch
    (lines before the header, such as a program's own output, are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    launches: dict[str, Profiled] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if not row.get("ID") or not row["ID"].isdigit():
            continue                  # a trailing line that is not a record
        launch = launches.setdefault(row["ID"], Profiled(
            row.get("Kernel Name", ""), row.get("Block Size", ""), row.get("Grid Size", ""),
            row.get("Device", "")))
        if row.get("Rule Name"):
            launch.rules[row["Rule Name"]] = row.get("Rule Description") or ""
        elif row.get("Metric Name"):
            launch.metrics.append(Metric(row.get("Section Name", ""), row["Metric Name"],
                                         row.get("Metric Unit") or "", row.get("Metric Value", "")))
    return list(launches.values())


_SOL = "GPU Speed Of Light Throughput"
_UNITS = (("Compute (SM)", "Compute (SM) Throughput"), ("DRAM", "DRAM Throughput"),
          ("L1/TEX cache", "L1/TEX Cache Throughput"), ("L2 cache", "L2 Cache Throughput"))


@dataclass(frozen=True)
class Summary:
    kernel: str
    duration_us: float | None
    dram_pct: float | None              # DRAM throughput, % of peak
    memory_pct: float | None            # the busiest memory unit, % of peak
    compute_pct: float | None
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    registers: int | None
    limiter: str
    occupancy_limiter: str | None       # what caps the blocks per SM
    advice: str | None                  # ncu's own SOL rule text

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "duration_us": self.duration_us,
                "dram_throughput_pct": self.dram_pct, "memory_throughput_pct": self.memory_pct,
                "compute_throughput_pct": self.compute_pct,
                "achieved_occupancy_pct": self.achieved_occupancy_pct,
                "theoretical_occupancy_pct": self.theoretical_occupancy_pct,
                "registers": self.registers, "limiter": self.limiter,
                "occupancy_limiter": self.occupancy_limiter, "ncu_advice": self.advice}


def summarize(launch: Profiled) -> Summary:
    duration = launch.get(_SOL, "Duration")
    duration_us = None
    if duration is not None and duration.number() is not None:
        duration_us = duration.number() * _TIME_UNITS.get(duration.unit, float("nan"))
    registers = launch.number("Launch Statistics", "Registers Per Thread")
    return Summary(
        kernel=launch.kernel, duration_us=duration_us,
        dram_pct=launch.number(_SOL, "DRAM Throughput"),
        memory_pct=launch.number(_SOL, "Memory Throughput"),
        compute_pct=launch.number(_SOL, "Compute (SM) Throughput"),
        achieved_occupancy_pct=launch.number("Occupancy", "Achieved Occupancy"),
        theoretical_occupancy_pct=launch.number("Occupancy", "Theoretical Occupancy"),
        registers=int(registers) if registers is not None else None,
        limiter=_limiter(launch), occupancy_limiter=_occupancy_limiter(launch),
        advice=launch.rules.get("SOLBottleneck"))


def _limiter(launch: Profiled) -> str:
    """The unit closest to its peak; below SATURATED % none is, and latency
    (too little parallel work, or dependent operations) is what limits."""
    units = [(launch.number(_SOL, metric), label) for label, metric in _UNITS]
    units = [(value, label) for value, label in units if value is not None]
    if not units:
        return "unknown (no Speed Of Light data)"
    value, label = max(units)
    if value >= SATURATED:
        return f"{label} throughput ({value:.0f}% of peak)"
    return (f"latency: no unit above {SATURATED:.0f}% of peak (busiest: {label} at "
            f"{value:.0f}%)")


def _occupancy_limiter(launch: Profiled) -> str | None:
    limits = [(m.number(), m.name.removeprefix("Block Limit ")) for m in launch.metrics
              if m.section == "Occupancy" and m.name.startswith("Block Limit ")
              and m.number() is not None]
    if not limits:
        return None
    blocks, what = min(limits)
    return f"{what.lower()} ({blocks:.0f} blocks per SM)"


# ---------------------------------------------------------------- running it

@dataclass
class ProfileRun:
    summary: Summary
    command: list[str]
    l2: str
    clock_control: str
    report_path: str | None             # kept with -o
    run_report: dict | None             # cubinrun's JSON from the profiled process
    exit_code: int                      # the profiled process's

    def to_json(self) -> dict:
        return {**self.summary.to_json(), "l2": self.l2, "clock_control": self.clock_control,
                "report": self.report_path, "command": self.command}


def run_profile(kernel: str, l2: str, program: list[str], extra: list[str],
                keep: str | None = None, executable: str | None = None) -> ProfileRun:
    import json
    executable = executable or find_ncu()
    with tempfile.TemporaryDirectory(prefix="cubinrun-profile-") as folder:
        report = os.path.join(folder, "profile")    # kept below: ncu would follow a link
        log = os.path.join(folder, "ncu.log")
        command = ncu_command(executable, kernel, l2, report, log, extra, program)
        done = _run(command)
        log_text = Path(log).read_text(errors="replace") if os.path.exists(log) else ""
        report_file = report + ".ncu-rep"
        if not os.path.exists(report_file):
            why = _ncu_error(log_text + done.stderr) or f"exit code {done.returncode}"
            raise CudaError(f"ncu wrote no report: {why}", call=EXECUTABLE)
        details = _run(import_command(executable, report_file))
        launches = parse_details(details.stdout)
        if keep:
            report_file = _keep(report_file, keep)
    if not launches:
        raise CudaError(f"ncu profiled no launch of {kernel}: "
                        f"{_ncu_error(log_text) or 'the kernel filter matched nothing'}",
                        call=EXECUTABLE)
    run_report = None
    try:
        run_report = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        pass
    given = [token for token in extra if token.split("=", 1)[0] == "--clock-control"]
    clock = "none"
    if given:
        token = given[-1]
        clock = token.split("=", 1)[1] if "=" in token else extra[extra.index(token) + 1]
    return ProfileRun(summarize(launches[0]), command, l2, clock,
                      report_file if keep else None, run_report, done.returncode)


def _keep(report_file: str, keep: str) -> str:
    """`-o PATH`: the report copied to PATH.ncu-rep as every output is written
    (files.write_output: a new file that takes the name, never through a link)."""
    from ..files import write_output
    kept = keep if keep.endswith(".ncu-rep") else keep + ".ncu-rep"
    write_output(kept, Path(report_file).read_bytes(), True, "-o")
    return kept


def _run(command: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        raise CudaError(f"{command[0]} could not be run: {exc}", call=EXECUTABLE) from None


def _ncu_error(text: str) -> str | None:
    lines = [line.removeprefix("==ERROR==").strip() for line in text.splitlines()
             if line.startswith("==ERROR==")]
    return lines[0] if lines else None
