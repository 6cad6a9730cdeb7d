"""The result files: `--json` (one document), `--jsonl` (a line per run, as
it ends), `--csv`, `--markdown` (GitHub-flavoured, for $GITHUB_STEP_SUMMARY)
and `--junit` (JUnit XML as GitLab, Jenkins and GitHub's test reporters read
it: a failed check or a regression is a <failure>, a spec, build or CUDA
error an <error>; each run is a test case named by spec and point).

NaN and infinities are written as null (valid JSON). `-` as a path means
stdout.

Each command writes its result files afresh (SPEC section 3: a CI workspace
that is reused must not mix runs); `--append` keeps what a JSONL file holds.
The one exception is the file GitHub names in $GITHUB_STEP_SUMMARY: GitHub
gives each step that file and documents appending to it (`>>`), so a step
that printed its own summary first keeps it, and cubinrun's table is added.
"""
from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

from ..errors import UsageError
from ..text import finite
from .rows import (DEBUG_CHECKS, any_processes, failed_checks, number, percent, point_text, row,
                   spread_text)

CSV_COLUMNS = ("spec", "point", "kernel", "device", "device_ordinal", "device_uuid", "host",
               "exit_code", "status", "check",
               "median_us", "min_us", "max_us", "mean_us", "std_us", "p10_us", "p90_us",
               "samples", "l2", "sm_clock_mhz", "timer", "throttled_samples", "noise",
               "processes", "process_spread", "too_noisy",
               "gbps", "tflops", "bandwidth_fraction", "fp32_fraction",
               "j_per_launch", "watts", "energy_sm_clock_mhz",
               "verdict", "ratio", "energy_ratio", "error")


def summarize(results: list[dict], exit_code: int, not_run: int = 0,
              wall_s: float | None = None) -> dict:
    statuses: dict[str, int] = {}
    for result in results:
        status = row(result)["status"]
        statuses[status] = statuses.get(status, 0) + 1
    return {"runs": len(results), "statuses": statuses, "exit_code": exit_code,
            "not_run": not_run, "wall_s": None if wall_s is None else round(wall_s, 3)}


def headline(summary: dict) -> str:
    parts = ", ".join(f"{n} {status}" for status, n in summary["statuses"].items())
    text = f"{summary['runs']} run{'s' if summary['runs'] != 1 else ''}: {parts}"
    if summary.get("not_run"):
        text += f"; {summary['not_run']} not run (--fail-fast)"
    return text + f"; exit {summary['exit_code']}"


def json_document(results: list[dict], summary: dict, single: bool) -> dict:
    """SPEC section 3: one run keeps the section-2 object; several are wrapped."""
    if single and len(results) == 1:
        return finite(results[0])
    return finite({"results": results, "summary": summary})


class JsonLines:
    """`--jsonl PATH`: one result per line, flushed as each run ends, so a job
    that is killed keeps what it finished. The file is written afresh, or
    added to with `append` (--append: several commands collect one file).

    No line is ever torn. Written afresh, the file is locked: a second command
    naming it while the first runs is refused (UsageError naming the file and
    the process), before it touches a byte, and the file stays the first's.
    With --append each line is one write() to a file opened O_APPEND (on
    Windows also under a lock, files.append_turn), so commands running at
    once interleave whole lines. A write that fails (a
    full disk) is UsageError naming the flag, and a line it cut short is
    taken back (afresh only: with --append another writer may follow it)."""

    def __init__(self, path: str, append: bool = False):
        from ..files import lock_for_writing, open_in_place
        self.path, self.append, self.fd = path, append, None
        if path == "-":
            return
        try:        # not truncated: it may be another's; a link is replaced, not followed
            fd = open_in_place(path, os.O_WRONLY | (os.O_APPEND if append else 0))
        except OSError as exc:
            raise _cannot_write("--jsonl", path, exc) from None
        if not append and (holder := lock_for_writing(fd)):
            os.close(fd)
            raise UsageError(f"cannot write --jsonl {path}: {holder} is writing it (give each "
                             "command its own file, or --append to collect one)")
        self.fd = fd
        if not append:
            os.ftruncate(fd, 0)

    def write(self, result: dict) -> None:
        line = json.dumps(finite(result)) + "\n"
        if self.fd is None:
            sys.stdout.write(line)
            sys.stdout.flush()
            return
        from contextlib import nullcontext

        from ..files import append_turn
        data = line.encode("utf-8")
        start = None if self.append else os.lseek(self.fd, 0, os.SEEK_CUR)
        try:
            with append_turn(self.fd) if self.append else nullcontext():
                while data:                 # one write() for a regular file, short only when full
                    data = data[os.write(self.fd, data):]
        except OSError as exc:
            if start is not None:
                os.ftruncate(self.fd, start)
                os.lseek(self.fd, start, os.SEEK_SET)
            raise _cannot_write("--jsonl", self.path, exc) from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)               # the lock goes with it
            self.fd = None


def _cannot_write(flag: str, path: str, error: OSError) -> UsageError:
    return UsageError(f"cannot write {flag} {path}: {error.strerror or error}")


def csv_text(results: list[dict]) -> str:
    """One row per run; each swept var also gets a `point.NAME` column."""
    import csv                      # here: every launch imports this module, few write CSV
    point_columns: list[str] = []
    for result in results:
        for name in result.get("point") or {}:
            if f"point.{name}" not in point_columns:
                point_columns.append(f"point.{name}")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*CSV_COLUMNS, *point_columns], lineterminator="\n")
    writer.writeheader()
    for result in results:
        timing = result.get("timing") or {}
        t = result.get("throughput") or {}
        flat = row(result)
        device = result.get("device") or {}
        record = {
            "spec": flat["spec"], "point": flat["point"], "kernel": flat["kernel"],
            "device": device.get("name"), "device_ordinal": device.get("ordinal"),
            "device_uuid": device.get("uuid"), "host": device.get("host"),
            "exit_code": result.get("exit_code"), "status": flat["status"],
            "check": flat["check"], "verdict": flat["verdict"], "ratio": flat["ratio"],
            "error": flat["error"],
            **{k: timing.get(k) for k in ("median_us", "min_us", "max_us", "mean_us", "std_us",
                                          "p10_us", "p90_us", "samples", "l2", "sm_clock_mhz",
                                          "timer", "throttled_samples", "noise", "processes",
                                          "process_spread", "too_noisy")},
            "j_per_launch": flat["j_per_launch"], "watts": flat["watts"],
            "energy_sm_clock_mhz": (result.get("energy") or {}).get("sm_clock_mhz"),
            "energy_ratio": flat["energy_ratio"],
            **{k: t.get(k) for k in ("gbps", "tflops", "bandwidth_fraction", "fp32_fraction")},
            **{f"point.{k}": v for k, v in (result.get("point") or {}).items()},
        }
        writer.writerow({k: ("" if v is None else v) for k, v in finite(record).items()})
    return out.getvalue()


def markdown_text(results: list[dict], summary: dict) -> str:
    compared = any(r.get("compare") for r in results)
    energy = any(r.get("energy") for r in results)
    header = ["spec", "point", "median µs", "throughput", "% of peak", "check", "status"]
    if energy:
        header[5:5] = ["J/launch", "W"]
    processes = any_processes(results)
    if processes:
        header += ["spread"]
    if compared:
        header += ["vs baseline"]
    lines = [f"### cubinrun: {_md(headline(summary))}", "",
             "| " + " | ".join(header) + " |",
             "| " + " | ".join("---:" if h in NUMERIC_COLUMNS else "---"
                               for h in header) + " |"]
    for result in results:
        flat = row(result)
        status = flat["status"] + (f": {flat['error']}" if flat["error"] else "")
        cells = [f"`{flat['spec']}`", flat["point"], number(flat["median_us"]),
                 f"{number(flat['throughput'])} {flat['unit']}".strip(),
                 percent(flat["peak_fraction"]), flat["check"], status]
        if energy:
            cells[5:5] = [number(flat["j_per_launch"], 4), number(flat["watts"], 0)]
        if processes:
            cells.append(spread_text(flat))
        if compared:
            cells.append(_verdict_text(result.get("compare")))
        lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


NUMERIC_COLUMNS = ("median µs", "throughput", "% of peak", "J/launch", "W")


def _verdict_text(compare: dict | None) -> str:
    if not compare:
        return ""
    ratio = compare.get("ratio")
    return compare["verdict"] + (f" ({ratio:.3f}x)" if ratio is not None else "")


def _not_run(result: dict) -> bool:
    """A sweep's point that fails a constraint, or is invalid with `sweep_invalid: skip`."""
    return result.get("exit_code") == 0 and result.get("status") in ("skipped", "invalid")


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def junit_text(results: list[dict], summary: dict) -> str:
    import xml.etree.ElementTree as ET
    failures = sum(1 for r in results if r.get("exit_code") in (1, 5))
    errors = sum(1 for r in results if r.get("exit_code") in (2, 3, 4))
    skipped = sum(1 for r in results if _not_run(r))
    total_time = sum(r.get("wall_s") or 0.0 for r in results)
    suites = ET.Element("testsuites", name="cubinrun", tests=str(len(results)),
                        failures=str(failures), errors=str(errors), time=f"{total_time:.3f}")
    suite = ET.SubElement(suites, "testsuite", name="cubinrun", tests=str(len(results)),
                          failures=str(failures), errors=str(errors), skipped=str(skipped),
                          time=f"{total_time:.3f}")
    for result in results:
        flat = row(result)
        name = flat["kernel"] or Path(flat["spec"]).stem
        if flat["point"]:
            name += f"[{flat['point']}]"
        case = ET.SubElement(suite, "testcase", classname=_classname(flat["spec"]), name=name,
                             time=f"{result.get('wall_s') or 0.0:.3f}")
        properties = {k: flat[k] for k in ("median_us", "throughput", "peak_fraction", "ratio",
                                           "j_per_launch", "watts", "energy_ratio",
                                           "throttled_samples")
                      if flat[k] is not None}
        if properties:
            props = ET.SubElement(case, "properties")
            for key, value in properties.items():
                ET.SubElement(props, "property", name=key, value=f"{value:.6g}")
        code = result.get("exit_code")
        if code == 1:
            failed = failed_checks(result)
            failure = ET.SubElement(case, "failure", type="check",
                                    message=f"failed: {', '.join(failed) or 'the check'}")
            details = {"check": (result.get("check") or {}).get("outputs"),
                       **{key: result[key] for key, _ in DEBUG_CHECKS
                          if (result.get(key) or {}).get("passed") is False}}
            failure.text = json.dumps(finite(details), indent=1)
        elif code == 5:
            compare = result.get("compare") or {}
            ET.SubElement(case, "failure", type="regression",
                          message=f"slower than the baseline: {_verdict_text(compare)} "
                                  f"{compare.get('reason') or ''}".strip())
        elif _not_run(result):
            reason = (f"constraint {result['constraint']}" if result.get("constraint")
                      else (result.get("error") or {}).get("message"))
            ET.SubElement(case, "skipped", message=f"{result['status']}: {reason}")
        elif code in (2, 3, 4):
            error = result.get("error") or {}
            ET.SubElement(case, "error", type=str(error.get("type")),
                          message=str(error.get("message")))
        if flat["median_us"] is not None:
            out = ET.SubElement(case, "system-out")
            out.text = (f"median {number(flat['median_us'])} us  "
                        f"{number(flat['throughput'])} {flat['unit']}  "
                        f"{percent(flat['peak_fraction'])} of peak").strip()
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _classname(spec: str) -> str:
    path = Path(spec)
    folders = [part for part in path.parent.parts if part != path.anchor]
    return ".".join([*folders, path.stem]).lstrip(".") or "cubinrun"


def write_files(results: list[dict], summary: dict, csv_path: str | None,
                markdown: str | None, junit: str | None) -> None:
    """The result files written once all runs have ended (JSONL goes as they end)."""
    if csv_path:
        write_text("--csv", csv_path, csv_text(results))
    if markdown:
        append = is_step_summary(markdown)
        write_text("--markdown", markdown,
                   ("\n" if append else "") + markdown_text(results, summary), append=append)
    if junit:
        write_text("--junit", junit, junit_text(results, summary))


def is_step_summary(path: str) -> bool:
    """Whether `path` is GitHub's $GITHUB_STEP_SUMMARY file (appended to, not replaced)."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary or path == "-":
        return False
    if path == summary:
        return True
    try:
        return os.path.samefile(path, summary)
    except OSError:
        return False


def write_text(flag: str, path: str, text: str, append: bool = False) -> None:
    """`text` as the file `path` (`flag` names it in an error). Afresh, it goes
    to a new file that then takes the name (files.OutputFile): two commands
    that write one file leave one's whole content, and a link is replaced,
    not written through (appended to, a link is replaced by a new file too)."""
    from ..files import OutputFile, append_output
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if append:
        append_output(path, text, flag)
        return
    try:
        with OutputFile(path) as written:
            written.file.write(text.encode("utf-8"))
    except OSError as exc:
        raise _cannot_write(flag, path, exc) from None


def point_label(result: dict) -> str:
    return point_text(result.get("point") or {})
