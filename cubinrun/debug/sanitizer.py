"""`launch --sanitize [TOOL]`: run the spec once under NVIDIA's compute-sanitizer.

cubinrun runs itself (`launch SPEC --no-bench --no-guard --json`) under
compute-sanitizer, limited to the spec's kernel and its first launch, and
reads the findings back from the tool's XML (`--xml --save`), falling back to
its text output. `--padding 256` puts room between allocations, so a read
just past a buffer lands outside every allocation instead of inside the next
one, where memcheck cannot see it; guard bands are off for the same reason
(memcheck counts guard bytes as part of the allocation). Host backtraces are
off: they show cubinrun's Python frames, not the kernel's.

compute-sanitizer is looked for on PATH, in $CUDA_HOME/bin (and $CUDA_PATH),
/usr/local/cuda/bin and the `nvidia-cuda-sanitizer-api` wheel.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import CudaError

ERROR_EXIT = 99             # --error-exitcode: the tool found something
PADDING = 256
PRINT_LIMIT = 1000          # findings the tool records in full; the summary counts them all
WHEELS = ("nvidia-cuda-sanitizer-api", "nvidia-cuda-sanitizer-api-cu12")
EXECUTABLE = "compute-sanitizer"


# ---------------------------------------------------------------- findings

@dataclass(frozen=True)
class Finding:
    """One record of the tool: what, who (thread, block), where (address, source)."""
    kind: str                                  # e.g. "Invalid __global__ read"
    message: str                               # the tool's own sentence
    thread: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    address: int | None = None
    size: int | None = None                    # bytes accessed
    function: str | None = None
    file: str | None = None                    # source file name (no folder)
    line: int | None = None
    detail: str | None = None                  # e.g. where the nearest allocation is
    severity: str = "error"

    @property
    def source(self) -> str | None:
        if self.file is None:
            return self.function
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def to_json(self) -> dict:
        return {"kind": self.kind, "message": self.message, "severity": self.severity,
                "thread": list(self.thread) if self.thread else None,
                "block": list(self.block) if self.block else None,
                "address": hex(self.address) if self.address is not None else None,
                "size": self.size, "function": self.function, "source": self.source,
                "detail": self.detail}


@dataclass
class Parsed:
    findings: list[Finding] = field(default_factory=list)
    errors: int | None = None                  # the tool's ERROR SUMMARY (all, shown or not)


_SIZE = re.compile(r"^(?P<kind>.*?) of size (?P<size>\d+) bytes?")
_BARRIER = re.compile(r"^Barrier error detected\. (?P<what>.*?)\.?$")
_RACE = re.compile(r"^(?P<severity>Error|Warning): Race reported between (?P<a>\w+) access at "
                   r"(?P<afunc>[^ +]+)\S* in (?P<apos>\S+)")
_RACE_END = re.compile(r"^and (?P<b>\w+) access at (?P<bfunc>[^ +]+)\S* in (?P<bpos>\S+)"
                       r"(?: \[(?P<count>\d+) hazards?\])?")
_API = re.compile(r"^Program hit (?P<error>\w+) \(error \d+\) due to \"(?P<why>.*)\" on CUDA "
                  r"API call to (?P<call>\w+)")
_AT = re.compile(r"^at (?P<func>[^ +]+)(?:\+0x[0-9a-fA-F]+)?(?: in (?P<pos>\S+))?")
_WHO = re.compile(r"^by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)")
_ADDRESS = re.compile(r"^(?:Access to|Address|Access at) (0x[0-9a-fA-F]+)")
_NEAREST = re.compile(r"^and is .* allocation .*")
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?\s*$")
_HAZARDS = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, "
                      r"(\d+) warnings?\)")
_PREFIX = "========="


def parse_text(text: str) -> Parsed:
    """compute-sanitizer's text output (lines prefixed with =========; other
    lines, the program's own, are skipped)."""
    parsed = Parsed()
    record: list[str] = []

    def close() -> None:
        if record:
            finding = _text_record(record)
            if finding is not None:
                parsed.findings.append(finding)
            record.clear()

    for raw in text.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        body = raw[len(_PREFIX):]
        stripped = body.strip()
        if (m := _ERRORS.search(stripped)) and parsed.errors is None:
            parsed.errors = int(m.group(1))
        elif m := _HAZARDS.search(stripped):
            parsed.errors = int(m.group(1)) + int(m.group(2))
        if not stripped:
            close()
        elif body.startswith(" " * 5):           # a detail line of the current record
            if not stripped.startswith(("Host Frame", "Device Frame")):
                record.append(stripped)
        else:
            close()
            record.append(stripped)
    close()
    return parsed


def _text_record(lines: list[str]) -> Finding | None:
    head = lines[0]
    if m := _RACE.match(head):
        end = _RACE_END.match(lines[1]) if len(lines) > 1 else None
        afile, aline = _position(m.group("apos"))
        detail = f"{m.group('a')} at {m.group('apos')}"
        if end:
            detail += f", {end.group('b')} at {end.group('bpos')}"
            if end.group("count"):
                detail += f", {end.group('count')} hazards"
        return Finding("Race condition", head if not end else f"{head} {lines[1]}",
                       function=m.group("afunc"), file=afile, line=aline, detail=detail,
                       severity=m.group("severity").lower())
    if m := _API.match(head):
        return Finding("CUDA API error", head, function=m.group("call"),
                       detail=m.group("error"))
    if m := _BARRIER.match(head):
        kind, size = f"Barrier error: {m.group('what')}", None
    elif m := _SIZE.match(head):
        kind, size = m.group("kind"), int(m.group("size"))
    elif head.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY",
                          "LEAK SUMMARY", "Target application", "Error: ", "Warning: ")):
        return None
    else:
        kind, size = head.rstrip("."), None
    finding = dict(kind=kind, message=head, size=size)
    details = []
    for line in lines[1:]:
        if m := _AT.match(line):
            finding["function"] = m.group("func")
            if m.group("pos"):
                finding["file"], finding["line"] = _position(m.group("pos"))
        elif m := _WHO.match(line):
            values = [int(v) for v in m.groups()]
            finding["thread"], finding["block"] = tuple(values[:3]), tuple(values[3:])
        elif m := _ADDRESS.match(line):
            finding["address"] = int(m.group(1), 16)
            if "out of bounds" in line:
                details.append("out of bounds")
        elif _NEAREST.match(line):
            details.append(line.removeprefix("and ").replace(",", ""))
    if details:
        finding["detail"] = "; ".join(details)
    return Finding(**finding)


def _position(text: str) -> tuple[str, int | None]:
    name, _, line = text.rpartition(":")
    if name and line.isdigit():
        return os.path.basename(name), int(line)
    return os.path.basename(text), None


def parse_xml(data: str | bytes) -> Parsed:
    """The file `--xml --save FILE` writes: one <record> per finding."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(data)
    parsed = Parsed()
    for record in root.iter("record"):
        finding = _xml_record(record)
        if finding is not None:
            parsed.findings.append(finding)
    return parsed


def _xml_record(record) -> Finding | None:
    kind = record.findtext("kind", "")
    what = record.find("what")
    if what is None:
        return None
    text = (what.findtext("text") or "").strip()
    severity = (record.findtext("level") or "Error").lower()
    if kind == "Api":
        call = what.findtext("api")
        return Finding("CUDA API error", text, function=call, severity=severity,
                       detail=what.findtext("error"))
    if kind == "Analysis":                       # racecheck
        source, destination = what.find("source"), what.find("destination")
        first = source if source is not None else destination
        function, file, line = _xml_where(first.find("where") if first is not None else None)
        parts = []
        for side in (source, destination):
            if side is not None:
                _, f, n = _xml_where(side.find("where"))
                parts.append(f"{side.findtext('direction')} at {f}:{n}")
        count = destination.findtext("count") if destination is not None else None
        if count:
            parts.append(f"{count} hazards")
        return Finding(text or "Race condition", text, function=function, file=file, line=line,
                       detail=", ".join(parts), severity=severity)
    finding: dict = {"message": text, "severity": severity}
    if kind == "Synccheck":
        kind_text = f"{text}: {what.findtext('type')}" if what.findtext("type") else text
    else:
        kind_text = m.group("kind") if (m := _SIZE.match(text)) else text
    finding["kind"] = kind_text
    size = what.findtext("size")
    finding["size"] = int(size) if size else None
    address = what.findtext("address")
    finding["address"] = int(address, 16) if address else None
    if what.findtext("error"):
        finding["detail"] = what.findtext("error")
    who = record.find("who")
    if who is not None:
        finding["thread"] = _xml_dim(who.find("threadIdx"))
        finding["block"] = _xml_dim(who.find("blockIdx"))
    finding["function"], finding["file"], finding["line"] = _xml_where(record.find("where"))
    return Finding(**finding)


def _xml_dim(node) -> tuple[int, int, int] | None:
    if node is None:
        return None
    return tuple(int(node.findtext(axis) or 0) for axis in "xyz")


def _xml_where(node) -> tuple[str | None, str | None, int | None]:
    if node is None:
        return None, None, None
    path, line = node.findtext("path"), node.findtext("line")
    return (node.findtext("func"), os.path.basename(path) if path else None,
            int(line) if line else None)


# ---------------------------------------------------------------- the tool

def find_sanitizer() -> str:
    """The compute-sanitizer executable, or CudaError (exit 4) saying where it looked."""
    from .tools import find_tool
    wheel = (f"the {WHEELS[0]} wheel (not installed)",
             lambda: _in_wheel(WHEELS[0]) or _in_wheel(WHEELS[1]))
    return find_tool(EXECUTABLE, more=[wheel],
                     advice=f"install the CUDA toolkit or `pip install {WHEELS[0]}`")


def _in_wheel(distribution: str) -> str | None:
    from importlib import metadata
    try:
        files = metadata.distribution(distribution).files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name in (EXECUTABLE, EXECUTABLE + ".exe", EXECUTABLE + ".bat"):
            path = Path(file.locate())
            if path.is_file():
                return str(path)
    return None


def sanitizer_command(executable: str, tool: str, kernel: str | None, xml_path: str,
                      log_path: str, program: Iterable[str]) -> list[str]:
    command = [executable, "--tool", tool, "--launch-count", "1",
               "--error-exitcode", str(ERROR_EXIT), "--padding", str(PADDING),
               "--print-limit", str(PRINT_LIMIT), "--show-backtrace", "device",
               "--log-file", log_path, "--xml", "--save", xml_path]
    if kernel:
        command += ["--kernel-name", f"kns={kernel}"]
    return command + list(program)


@dataclass
class SanitizerRun:
    """What one run under the tool gave."""
    tool: str
    kernel: str | None
    command: list[str]
    exit_code: int                     # compute-sanitizer's
    findings: list[Finding]
    errors: int                        # the tool's count, shown or not
    report: dict | None                # cubinrun's own JSON report, when it got that far
    stderr: str                        # cubinrun's diagnostics
    log: str                           # the tool's text output

    @property
    def passed(self) -> bool:
        return not self.findings and self.errors == 0 and self.exit_code != ERROR_EXIT

    @property
    def tool_error(self) -> str | None:
        """The tool's own last error line (e.g. it could not start the program)."""
        lines = [line.removeprefix(_PREFIX).strip() for line in self.log.splitlines()
                 if line.startswith(_PREFIX) and "Error" in line]
        return lines[-1] if lines else None

    @property
    def program_error(self) -> str | None:
        """cubinrun's own error line (e.g. the launch failing after a memcheck error)."""
        lines = [line for line in self.stderr.splitlines() if line.startswith("error: ")]
        return lines[-1].removeprefix("error: ") if lines else None

    def to_json(self) -> dict:
        return {"tool": self.tool, "kernel": self.kernel, "passed": self.passed,
                "errors": self.errors, "findings_shown": len(self.findings),
                "findings": [f.to_json() for f in self.findings],
                "program_error": self.program_error, "command": self.command}


def run_sanitizer(tool: str, kernel: str | None, program: list[str],
                  executable: str | None = None) -> SanitizerRun:
    import json
    executable = executable or find_sanitizer()
    with tempfile.TemporaryDirectory(prefix="cubinrun-sanitize-") as folder:
        xml_path, log_path = os.path.join(folder, "findings.xml"), os.path.join(folder, "log.txt")
        command = sanitizer_command(executable, tool, kernel, xml_path, log_path, program)
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except OSError as exc:
            raise CudaError(f"{executable} could not be run: {exc}", call=EXECUTABLE) from None
        log = Path(log_path).read_text(errors="replace") if os.path.exists(log_path) else ""
        log += done.stdout if not done.stdout.lstrip().startswith("{") else ""
        from_text = parse_text(log)
        parsed = from_text
        if os.path.exists(xml_path) and os.path.getsize(xml_path):
            try:
                parsed = parse_xml(Path(xml_path).read_bytes())
            except Exception:          # a truncated file (the tool killed): the text has it all
                parsed = from_text
    report = None
    if done.stdout.lstrip().startswith("{"):
        try:
            report = json.loads(done.stdout)
        except ValueError:
            report = None
    errors = from_text.errors if from_text.errors is not None else len(parsed.findings)
    return SanitizerRun(tool, kernel, command, done.returncode, parsed.findings, errors, report,
                        done.stderr, log)


def group_findings(findings: list[Finding]) -> list[tuple[Finding, int]]:
    """Findings of one kind at one place, with how many: the first stands for all."""
    groups: dict[tuple, list] = {}
    for finding in findings:
        key = (finding.kind, finding.source, finding.size, finding.severity)
        groups.setdefault(key, [finding, 0])[1] += 1
    return [(first, count) for first, count in groups.values()]
