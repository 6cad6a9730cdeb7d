"""Read results back: a `launch --json` document (one result, or
`{"results": [...], "summary": {...}}`) or a `--jsonl` file (one result per
line), as a list of result objects. `compare`, `plot` and `launch
--baseline` read through here.

Results written before sweeps existed have no `spec` or `point`: they get
`spec: null` (matched by kernel alone) and an empty point.

A results file is input like any other, and scripts edit, merge and damage
them, so everything is bounded and checked as it is read, and a bad value is
one line naming the file and line (`r.jsonl:12: ...`, exit 2):
- the file's size (MAX_RESULTS_BYTES) and, for one JSON document rather than
  JSON lines, MAX_RESULTS_DOCUMENT_BYTES: a document is parsed whole, while
  JSON lines are parsed one at a time and dropped;
- numbers: floats must be finite (`1e400` is not infinity), integers at most
  MAX_INT_BITS wide (a 400-digit integer is not a float any code can use);
  times are >= 0, a point's values are numbers or strings;
- the number of results (MAX_RESULT_RECORDS) and samples per run;
- each result keeps only the fields that compare, plot and the tables use,
  its samples as an array of doubles, so the memory held is a small multiple
  of the runs, not of the file.
"""
from __future__ import annotations

import itertools
import json
import math
from array import array
from pathlib import Path
from typing import Iterator

from ..errors import UsageError, shorten
from ..limits import (MAX_INT_BITS, MAX_PROCESSES, MAX_RESULT_RECORDS, MAX_RESULT_SAMPLES,
                      MAX_RESULT_TEXT_CHARS, MAX_RESULTS_BYTES, MAX_RESULTS_DOCUMENT_BYTES)

# The widest integer a result may hold, in decimal digits (a sign aside).
_MAX_INT_DIGITS = len(str(2 ** MAX_INT_BITS))

# What is kept of each result: the fields its readers use.
_KEPT = {"spec", "kernel", "kernel_mangled", "point", "exit_code", "status", "error", "device",
         "timing", "throughput", "check", "pow2", "compare", "energy", "timer", "wall_s",
         "constraint"}
_DEVICE_KEPT = ("name", "ordinal", "uuid", "host")
_TEXT_KEYS = {"spec", "kernel", "kernel_mangled", "status"}
_OBJECT_KEYS = {"device", "timing", "throughput", "check", "compare", "error", "energy"}
_TIME_KEYS = {"median_us", "min_us", "max_us", "mean_us", "std_us", "p10_us", "p90_us",
              "sm_clock_mhz", "event_offset_us", "graph_startup_us", "noise", "process_spread"}
_ENERGY_KEYS = {"j_per_launch", "watts", "sm_clock_mhz", "window_s", "launch_us"}


class Located(dict):
    """A result object that knows where it was read: `where` prefixes a message
    (`r.jsonl:12`), `place` names it within its file (`line 12`, `result 3`)."""

    where: str = ""
    place: str = ""


def read_results(path: str | Path) -> list[Located]:
    """Every result of one file, checked, in order."""
    path = Path(path)
    results = list(_results(path, _bytes(path)))
    if not results:
        raise UsageError(f"{path}: holds no results")
    return results


def refuse_duplicates(results: list[Located], path: str | Path) -> None:
    """A file holds each run (spec, kernel, point, device) once: a run twice
    (two commands appending to one file) would be matched twice. UsageError
    naming the run and both places."""
    seen: dict[tuple, Located] = {}
    for result in results:
        device = (result.get("device") or {}).get("name")
        key = (result.get("spec"), kernel_key(result), point_key(result["point"]), device)
        first = seen.setdefault(key, result)
        if first is not result:
            run = result.get("spec") or result.get("kernel") or "?"
            if result["point"]:
                run += f" [{', '.join(f'{k}={v}' for k, v in result['point'].items())}]"
            raise UsageError(
                f"{path}: the run {shorten(run, 200)}"
                + (f" on {device}" if device else "")
                + f" is there twice ({first.place} and {result.place}): keep one "
                "command's results per file (launch writes its files afresh; --append adds)")


def kernel_key(result: dict) -> str | None:
    """The kernel a result ran, as runs are matched by: its symbol. Results name a C++
    kernel as written (`kernel`) and by symbol (`kernel_mangled`); files written before
    that hold the symbol in `kernel`."""
    return result.get("kernel_mangled") or result.get("kernel")


def point_key(point: dict) -> str:
    """A point as one comparable string (order and int/float spelling ignored)."""
    return json.dumps({k: (int(v) if isinstance(v, float) and v.is_integer() else v)
                       for k, v in sorted(point.items())})


def _bytes(path: Path) -> bytes:
    from ..errors import SpecError
    from ..files import read_bounded
    try:
        return read_bounded(path, MAX_RESULTS_BYTES, "results")
    except SpecError as exc:
        raise UsageError(str(exc)) from None


def _results(path: Path, data: bytes) -> Iterator[Located]:
    """JSON lines one at a time, or one JSON document (over several lines, or
    on one line alone)."""
    decode = _Decoder()
    lines = _lines(data)
    number, line = next(lines, (0, b""))
    if not number:
        return
    try:
        first = decode(_decoded(line, f"{path}:{number}"), f"{path}:{number}")
    except json.JSONDecodeError:
        yield from _document(path, data, decode)
        return
    following = next(lines, None)
    if following is None and isinstance(first, dict) and "results" in first:
        yield from _from_document(path, first)
        return
    yield _checked(first, f"{path}:{number}", f"line {number}")
    if following is not None:
        yield from _json_lines(path, itertools.chain([following], lines), decode)


def _json_lines(path: Path, lines: Iterator[tuple[int, bytes]],
                decode: "_Decoder") -> Iterator[Located]:
    """The results after the first, each parsed, checked and slimmed in turn."""
    for count, (number, line) in enumerate(lines, 2):
        where = f"{path}:{number}"
        if count > MAX_RESULT_RECORDS:
            raise UsageError(f"{where}: more than {MAX_RESULT_RECORDS} results, the most "
                             "one file may hold: split it")
        try:
            value = decode(_decoded(line, where), where)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: not JSON or JSON lines ({exc.msg})") from None
        yield _checked(value, where, f"line {number}")


def _decoded(line: bytes, where: str) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: not UTF-8 text (byte {line[exc.start]:#04x}); a results "
                         "file must be UTF-8") from None


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each line that is not blank, without copying the file."""
    start, number = 0, 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        line = data[start:end]
        start = end + 1
        if line.strip():
            yield number, line


def _document(path: Path, data: bytes, decode: "_Decoder") -> Iterator[Located]:
    if len(data) > MAX_RESULTS_DOCUMENT_BYTES:
        raise UsageError(f"{path}: one JSON document larger than "
                         f"{MAX_RESULTS_DOCUMENT_BYTES >> 20} MiB, the most read whole: write "
                         "large results as JSON lines (launch --jsonl)")
    from ..errors import SpecError
    from ..files import decode_utf8
    try:
        document = decode(decode_utf8(data, str(path), "results"), str(path))
    except SpecError as exc:
        raise UsageError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: not JSON or JSON lines ({exc.msg})") from None
    yield from _from_document(path, document)


def _from_document(path: Path, document) -> Iterator[Located]:
    if isinstance(document, dict) and isinstance(document.get("results"), list):
        results = document["results"]
    elif isinstance(document, dict):
        results = [document]
    else:
        raise UsageError(f"{path}: not cubinrun results (a JSON {type(document).__name__})")
    if len(results) > MAX_RESULT_RECORDS:
        raise UsageError(f"{path}: more than {MAX_RESULT_RECORDS} results, the most one file "
                         "may hold: split it")
    for number, result in enumerate(results, 1):
        yield _checked(result, f"{path}: result {number}", f"result {number}")


class _Decoder:
    """json's decoder with every number checked as it is parsed, made once per
    file (json.loads with hooks would build a decoder per line); JSONDecodeError
    still means "not this kind of JSON"."""

    def __init__(self):
        self.where = ""
        self.decoder = json.JSONDecoder(parse_constant=self._constant,
                                        parse_float=self._float, parse_int=self._int)

    def __call__(self, text: str, where: str):
        self.where = where
        try:
            return self.decoder.decode(text)
        except json.JSONDecodeError:
            raise
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else shorten(str(exc))
            raise UsageError(f"{where}: not cubinrun results ({why})") from None

    def _constant(self, name):
        raise UsageError(f"{self.where}: {name} is not a number JSON allows")

    def _float(self, text):
        value = float(text)
        if not math.isfinite(value):
            raise UsageError(f"{self.where}: the number {shorten(text)} is beyond a float's "
                             "range")
        return value

    def _int(self, text):
        digits = len(text) - text.startswith("-")
        if digits > _MAX_INT_DIGITS:
            raise UsageError(f"{self.where}: an integer of {digits} digits; results hold "
                             f"integers of at most {MAX_INT_BITS} bits")
        return int(text)


def _checked(result, where: str, place: str) -> Located:
    if not isinstance(result, dict) or not ("kernel" in result or "spec" in result):
        raise UsageError(f"{where}: not a cubinrun result (no kernel or spec)")
    if problem := _problem(result):
        raise UsageError(f"{where}: {problem}")
    kept = Located((key, result[key]) for key in _KEPT & result.keys())
    kept.where, kept.place = where, place
    kept.setdefault("spec", None)
    if not isinstance(kept.get("point"), dict):
        kept["point"] = {}
    kept.setdefault("exit_code", 0)
    kept.setdefault("kernel", None)
    if isinstance(kept.get("device"), dict):
        kept["device"] = {k: v for k, v in kept["device"].items() if k in _DEVICE_KEPT}
    if isinstance(kept.get("check"), dict):          # what passed, not the errors' details
        outputs = kept["check"].get("outputs")
        kept["check"] = {"passed": kept["check"].get("passed")}
        if isinstance(outputs, dict):
            kept["check"]["outputs"] = {name: {"passed": out.get("passed")}
                                        for name, out in outputs.items() if isinstance(out, dict)}
    samples = (kept.get("timing") or {}).get("samples_us")
    if samples is not None:
        kept["timing"] = {**kept["timing"], "samples_us": array("d", samples)}
    return kept


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text(value) -> bool:
    return isinstance(value, str) and len(value) <= MAX_RESULT_TEXT_CHARS


def _problem(result: dict) -> str | None:
    """What is wrong with the types of a result's fields, or None."""
    for key in _TEXT_KEYS & result.keys():
        if result[key] is not None and not _text(result[key]):
            return f"`{key}` should be a string of at most {MAX_RESULT_TEXT_CHARS} characters"
    for key in _OBJECT_KEYS & result.keys():
        if result[key] is not None and not isinstance(result[key], dict):
            return f"`{key}` should be an object"
    if result.get("exit_code") is not None and not (
            isinstance(result["exit_code"], int) and not isinstance(result["exit_code"], bool)
            and 0 <= result["exit_code"] <= 255):
        return "`exit_code` should be an exit code"
    point = result.get("point")
    if point is not None and not isinstance(point, dict):
        return "`point` should map vars to numbers or strings"
    for name, value in (point or {}).items():
        if not (_number(value) or _text(value)):
            return f"`point.{shorten(name)}` should be a number or a string"
    name = (result.get("device") or {}).get("name")
    if name is not None and not _text(name):
        return "`device.name` should be a string"
    timing = result.get("timing") or {}
    for key in _TIME_KEYS & timing.keys():
        if timing[key] is not None and not (_number(timing[key]) and timing[key] >= 0):
            return f"`timing.{key}` should be a number >= 0"
    if timing.get("samples") is not None and not (
            isinstance(timing["samples"], int) and not isinstance(timing["samples"], bool)
            and timing["samples"] >= 0):
        return "`timing.samples` should be a count"
    if timing.get("processes") is not None and not (
            isinstance(timing["processes"], int) and not isinstance(timing["processes"], bool)
            and 1 <= timing["processes"] <= MAX_PROCESSES):
        return f"`timing.processes` should be a count from 1 to {MAX_PROCESSES}"
    medians = timing.get("process_medians_us")
    if medians is not None and not (isinstance(medians, list) and len(medians) <= MAX_PROCESSES
                                    and all(_number(v) and v >= 0 for v in medians)):
        return f"`timing.process_medians_us` should be a list of at most {MAX_PROCESSES} times >= 0"
    samples = timing.get("samples_us")
    if samples is not None and not (isinstance(samples, list) and len(samples) <= MAX_RESULT_SAMPLES
                                    and all(_number(v) and v >= 0 for v in samples)):
        return f"`timing.samples_us` should be a list of at most {MAX_RESULT_SAMPLES} times >= 0"
    energy = result.get("energy") or {}
    for key in _ENERGY_KEYS & energy.keys():
        if energy[key] is not None and not (_number(energy[key]) and energy[key] >= 0):
            return f"`energy.{key}` should be a number >= 0"
    throughput = result.get("throughput") or {}
    if not all(v is None or _number(v) for v in throughput.values()):
        return "`throughput` should hold numbers"
    if result.get("pow2") is not None and not (
            isinstance(result["pow2"], list) and all(_text(v) for v in result["pow2"])):
        return "`pow2` should be a list of var names"
    return None
