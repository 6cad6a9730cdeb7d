"""Read results back: a `launch --json` document (one result, or
`{"results": [...], "summary": {...}}`) or a `--jsonl` file (one result per
line), as result objects one at a time (`iter_results`: compare and launch
--baseline stream them) or a list (`read_results`: plot, tune --replay).

Results written before sweeps existed have no `spec` or `point`: they get
`spec: null` (matched by kernel alone) and an empty point.

A results file is input like any other, and scripts edit, merge and damage
them, so everything is bounded and checked as it is read, and a bad value is
one line naming the file and line (`r.jsonl:12: ...`, exit 2):
- what is parsed whole: one JSON document, or one line of JSON lines, at
  most MAX_RESULTS_DOCUMENT_BYTES; JSON lines are read as they go
  (`iter_results`), so a file of any length streams through `compare`;
- numbers: floats must be finite (`1e400` is not infinity), integers at most
  MAX_INT_BITS wide (a 400-digit integer is not a float any code can use);
  times are >= 0, a point's values are numbers or strings;
- samples per run, and the results held at once in a list (`read_results`,
  for plot and replay: MAX_RESULT_RECORDS);
- each result keeps only the fields that compare, plot and the tables use,
  its samples as an array of doubles, so the memory held is a small multiple
  of the runs, not of the file.
"""
from __future__ import annotations

import itertools
import json
import math
import os
from array import array
from pathlib import Path
from typing import Iterator

from ..errors import UsageError, shorten
from ..limits import (MAX_INT_BITS, MAX_PROCESSES, MAX_RESULT_RECORDS, MAX_RESULT_SAMPLES,
                      MAX_RESULT_TEXT_CHARS, MAX_RESULTS_DOCUMENT_BYTES)

# The widest integer a result may hold, in decimal digits (a sign aside).
_MAX_INT_DIGITS = len(str(2 ** MAX_INT_BITS))

try:        # a compiled parser for JSON lines, 5x json's; absent or not loading (Wine 8
    from orjson import loads as _compiled_loads     # fails on some Rust DLLs): json alone
except ImportError:
    _compiled_loads = None

# 19 digits in a row: a number orjson may read otherwise than json (past 64 bits
# it makes a float of an integer; a long mantissa's rounding): json reads it.
# Found by mapping every digit to 0 (a third of a regex search's time).
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19

# What is kept of each result: the fields its readers use.
_KEPT = {"spec", "kernel", "kernel_mangled", "point", "exit_code", "status", "error", "device",
         "timing", "throughput", "check", "pow2", "compare", "energy", "timer", "wall_s",
         "constraint"}
_DEVICE_KEPT = {"name", "ordinal", "uuid", "host"}
_TEXT_KEYS = {"spec", "kernel", "kernel_mangled", "status"}
_OBJECT_KEYS = {"device", "timing", "throughput", "check", "compare", "error", "energy"}
_TIME_KEYS = {"median_us", "min_us", "max_us", "mean_us", "std_us", "p10_us", "p90_us",
              "sm_clock_mhz", "event_offset_us", "graph_startup_us", "noise", "process_spread"}
_ENERGY_KEYS = {"j_per_launch", "watts", "sm_clock_mhz", "window_s", "launch_us"}


class Located(dict):
    """A result object that knows where it was read: `where` prefixes a message
    (`r.jsonl:12`), `place` names it within its file (`line 12`, `result 3`);
    one read from JSON lines also keeps its line (`raw`, `number`), so that an
    index can hold the bytes and read it again when it is needed."""

    # no dict per result: a million stream; made (and its slots set) by _slim
    # alone, without an __init__ of its own (a Python call: a million times two)
    __slots__ = ("where", "place", "raw", "number", "key")     # key: its run_key, once made


def read_results(path: str | Path) -> list[Located]:
    """Every result of one file, checked, in order, held in a list (plot and
    replay use them all at once: at most MAX_RESULT_RECORDS)."""
    results = []
    for result in iter_results(path):
        if len(results) == MAX_RESULT_RECORDS:
            raise UsageError(f"{result.where}: more than {MAX_RESULT_RECORDS} results, the most "
                             "held at once (plot, replay): split the file")
        result.raw = None                       # held parsed: its bytes are not needed
        results.append(result)
    return results


def iter_results(path: str | Path, slim: bool = True) -> Iterator[Located]:
    """Every result of one file, checked, in order, read as it goes: JSON lines
    one at a time (a line at most MAX_RESULTS_DOCUMENT_BYTES), one JSON
    document whole (at most that size too). UsageError for a file with none.

    slim=False: a result read from JSON lines comes checked but not slimmed,
    for an index that keeps only its line and its run_key (the same either
    way) and reads it again, slimmed, when it is used."""
    path = Path(path)
    from ..errors import SpecError
    from ..files import open_input
    try:
        fd = open_input(path, "results")
    except SpecError as exc:
        raise UsageError(str(exc)) from None
    with os.fdopen(fd, "rb") as stream:
        empty = True
        for result in _results(path, stream, slim):
            empty = False
            yield result
    if empty:
        raise UsageError(f"{path}: holds no results")


def reread(path: str | Path, number: int, raw: bytes) -> Located:
    """The result `iter_results` read from line `number` (its bytes `raw`, held
    since: checked then), again."""
    where = f"{path}:{number}"
    result = _slim(_REREAD.line(raw, where), where, f"line {number}")
    result.raw, result.number = raw, number
    return result


class DuplicateRuns:
    """A file holds each run (spec, kernel, point, device) once: a run twice
    (two commands appending to one file) would be matched twice. `add` each
    result of the file in turn: UsageError naming the run and both places.

    Holds one small entry per run (the one bound it needs: see
    docs/bad-input.md): for a JSON line, the hash of its key and its line
    number; two that share a hash are told apart by reading the first line
    again (the error's path, or a hash collision: about one in 10^13 pairs)."""

    def __init__(self, path: str | Path):
        self.path = path
        self.lines: dict[int, int] = {}         # hash of a line's key -> its line number
        #                                         (-1: that hash's keys are in `keys`)
        self.keys: dict[str, str] = {}          # whole keys: documents' results, collisions

    def each(self, results: Iterator[Located]) -> Iterator[Located]:
        """`results`, each added as it passes."""
        for result in results:
            self.add(result)
            yield result

    def add(self, result: Located) -> None:
        result.key = run = run_key(result)      # kept: compare matches by it next
        key = _device_key(result, run)
        if self.keys and (first := self.keys.get(key)) is not None:
            refuse_twice(self.path, result, first)
        number = getattr(result, "number", 0)
        if not number:
            self.keys[key] = result.place
            return
        line = self.lines.setdefault(hash(key), number)
        if line == number:
            return
        if line > 0:                            # the hash's first second key: its first
            first_key = self._key_of_line(line)     # line's key is read once, then held
            if first_key == key:
                refuse_twice(self.path, result, f"line {line}")
            self.keys[first_key] = f"line {line}"
            self.lines[hash(key)] = -1          # this hash's keys are all held whole now
        self.keys[key] = result.place

    def _key_of_line(self, number: int) -> str | None:
        """The key of the run at line `number` of the file, read again."""
        with open(self.path, "rb") as stream:
            for at, line in _lines(Path(self.path), stream):
                if at == number:
                    return _device_key(reread(self.path, number, line))
        return None


def _device_key(result: dict, run: str | None = None) -> str:
    return f"{run or run_key(result)}\0{(result.get('device') or {}).get('name')!r}"


def refuse_duplicates(results: list[Located], path: str | Path) -> None:
    """DuplicateRuns over a list already read."""
    seen = DuplicateRuns(path)
    for result in results:
        seen.add(result)


def refuse_twice(path, result: dict, first_place: str) -> None:
    device = (result.get("device") or {}).get("name")
    run = result.get("spec") or result.get("kernel") or "?"
    if result.get("point"):       # (a result not slimmed may have none)
        run += f" [{', '.join(f'{k}={v}' for k, v in result['point'].items())}]"
    raise UsageError(
        f"{path}: the run {shorten(run, 200)}"
        + (f" on {device}" if device else "")
        + f" is there twice ({first_place} and {getattr(result, 'place', '?')}): keep one "
        "command's results per file (launch writes its files afresh; --append adds)")


def run_key(result: dict, spec: str | None | bool = False) -> str:
    """Spec, kernel and point as one string (`spec` in place of the result's own
    when given): how runs are matched. Three parts split by NUL (which a repr
    never holds), each a repr: the point's (var, value) pairs in order, 64.0
    as 64 (as point_key spells it). A repr is a third of json.dumps's cost,
    which a million-run compare would pay twice a run."""
    point = result.get("point")
    if point:
        pairs = sorted(point.items())           # names differ: values never compared
        for at, (name, value) in enumerate(pairs):
            if type(value) is float and value.is_integer():
                pairs[at] = (name, int(value))
        pairs = tuple(pairs)
    else:
        pairs = ()
    return (f"{result.get('spec') if spec is False else spec!r}\0"
            f"{result.get('kernel_mangled') or result.get('kernel')!r}\0{pairs!r}")


def spec_of_key(key: str) -> tuple[str | None, str]:
    """(the spec a run_key names, the rest of the key after it)."""
    import ast
    spec, rest = key.split("\0", 1)
    return ast.literal_eval(spec), rest


def kernel_key(result: dict) -> str | None:
    """The kernel a result ran, as runs are matched by: its symbol. Results name a C++
    kernel as written (`kernel`) and by symbol (`kernel_mangled`); files written before
    that hold the symbol in `kernel`."""
    return result.get("kernel_mangled") or result.get("kernel")


def point_key(point: dict) -> str:
    """A point as one comparable string (order and int/float spelling ignored)."""
    return json.dumps({k: (int(v) if isinstance(v, float) and v.is_integer() else v)
                       for k, v in sorted(point.items())})


def _results(path: Path, stream, slim: bool = True) -> Iterator[Located]:
    """JSON lines one at a time, or one JSON document (over several lines, or
    on one line alone)."""
    decode = _Decoder()
    lines = _lines(path, stream)
    number, line = next(lines, (0, b""))
    if not number:
        return
    try:
        first = decode.line(line, f"{path}:{number}")
    except json.JSONDecodeError:
        stream.seek(0)
        yield from _document(path, stream.read(MAX_RESULTS_DOCUMENT_BYTES + 1), decode)
        return
    following = next(lines, None)
    if following is None and isinstance(first, dict) and "results" in first:
        yield from _from_document(path, first)
        return
    yield _kept_line(_checked(first, f"{path}:{number}", f"line {number}", slim), number, line)
    if following is not None:
        yield from _json_lines(path, itertools.chain([following], lines), decode, slim)


def _json_lines(path: Path, lines: Iterator[tuple[int, bytes]],
                decode: "_Decoder", slim: bool = True) -> Iterator[Located]:
    """The results after the first, each parsed, checked and slimmed in turn."""
    prefix = f"{path}:"
    for number, line in lines:
        where = prefix + str(number)
        try:
            value = decode.line(line, where)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: not JSON or JSON lines ({exc.msg})") from None
        yield _kept_line(_checked(value, where, "line " + str(number), slim), number, line)


def _kept_line(result: Located, number: int, line: bytes) -> Located:
    result.raw, result.number = line, number
    return result


def _decoded(line: bytes, where: str) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: not UTF-8 text (byte {line[exc.start]:#04x}); a results "
                         "file must be UTF-8") from None


def _lines(path: Path, stream) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each line that is not blank, read as it goes; a
    line is parsed whole, so it is at most MAX_RESULTS_DOCUMENT_BYTES."""
    number = 0
    while True:
        try:
            line = stream.readline(MAX_RESULTS_DOCUMENT_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if not line:
            return
        number += 1
        if len(line) > MAX_RESULTS_DOCUMENT_BYTES:
            raise UsageError(f"{path}:{number}: a line longer than "
                             f"{MAX_RESULTS_DOCUMENT_BYTES >> 20} MiB, the most read whole")
        line = line.rstrip(b"\r\n")
        if line and not line.isspace():     # (strip() would copy each line)
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
        self.scan = self.decoder.scan_once

    def __call__(self, text: str, where: str):
        self.where = where
        try:
            try:            # the scanner itself where the text has no space around it
                value, end = self.scan(text, 0)     # (decode() costs two regex matches more)
                if end == len(text):
                    return value
            except StopIteration:
                pass
            return self.decoder.decode(text)
        except json.JSONDecodeError:
            raise
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else shorten(str(exc))
            raise UsageError(f"{where}: not cubinrun results ({why})") from None

    def line(self, line: bytes, where: str):
        """One JSON line: orjson's where it reads it as json would (it refuses
        all json refuses but lone surrogates, and NaN, infinities and big
        integers, which the hooks refuse); else json's, for its value or its
        error (exactly the same message either way)."""
        if _compiled_loads is not None and \
                _LONG_DIGITS not in line.translate(_DIGITS_AS_ZERO):
            try:
                return _compiled_loads(line)
            except ValueError:
                pass
        return self(_decoded(line, where), where)

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


_REREAD = _Decoder()


def _checked(result, where: str, place: str, slim: bool = True) -> Located:
    if not isinstance(result, dict) or not ("kernel" in result or "spec" in result):
        raise UsageError(f"{where}: not a cubinrun result (no kernel or spec)")
    if problem := _problem(result):
        raise UsageError(f"{where}: {problem}")
    return _slim(result, where, place) if slim else _located(result, where, place)


def _located(result: dict, where: str, place: str) -> Located:
    """A copy of `result` that knows where it was read."""
    kept = Located(result)
    kept.where, kept.place, kept.raw, kept.number, kept.key = where, place, None, 0, None
    return kept


def _slim(result: dict, where: str, place: str) -> Located:
    """What is kept of a checked result (each step only where the result
    needs it: a million-run compare slims two million)."""
    kept = _located(result, where, place)   # a copy, then less: most hold only kept keys
    if not kept.keys() <= _KEPT:
        for key in kept.keys() - _KEPT:
            del kept[key]
    if "spec" not in kept:
        kept["spec"] = None
    if type(kept.get("point")) is not dict:
        kept["point"] = {}
    if "exit_code" not in kept:
        kept["exit_code"] = 0
    if "kernel" not in kept:
        kept["kernel"] = None
    device = kept.get("device")
    if isinstance(device, dict) and not device.keys() <= _DEVICE_KEPT:
        kept["device"] = {k: v for k, v in device.items() if k in _DEVICE_KEPT}
    check = kept.get("check")
    if isinstance(check, dict):     # what passed, not the details
        outputs = check.get("outputs")
        kept["check"] = {"passed": check.get("passed")}
        if isinstance(outputs, dict):
            kept["check"]["outputs"] = {name: {"passed": out.get("passed")}
                                        for name, out in outputs.items() if isinstance(out, dict)}
    timing = kept.get("timing")
    if timing and timing.get("samples_us") is not None:
        kept["timing"] = {**timing, "samples_us": array("d", timing["samples_us"])}
    return kept


def _number(value) -> bool:
    return (type(value) is float or type(value) is int     # JSON's own types: never a bool
            or isinstance(value, (int, float)) and not isinstance(value, bool))


def _text(value) -> bool:
    return type(value) is str and len(value) <= MAX_RESULT_TEXT_CHARS


def _problem(result: dict) -> str | None:
    """What is wrong with the types of a result's fields, or None: each field
    present checked by its own rule (a field that is null is absent)."""
    for key, value in result.items():
        if value is not None and (check := _FIELD_CHECKS.get(key)) is not None \
                and (problem := check(value)):
            return problem
    return None


def _text_field(key: str):
    def check(value) -> str | None:         # _text, inline: the commonest check
        if not (type(value) is str and len(value) <= MAX_RESULT_TEXT_CHARS):
            return f"`{key}` should be a string of at most {MAX_RESULT_TEXT_CHARS} characters"
        return None
    return check


def _object_field(key: str):
    def check(value) -> str | None:
        if not isinstance(value, dict):
            return f"`{key}` should be an object"
        return None
    return check


def _exit_code(value) -> str | None:
    if not (type(value) is int and 0 <= value <= 255):
        return "`exit_code` should be an exit code"
    return None


def _point(point) -> str | None:
    if not isinstance(point, dict):
        return "`point` should map vars to numbers or strings"
    for name, value in point.items():
        kind = type(value)          # JSON's own types first, without a call
        if kind is int or kind is float or kind is str and len(value) <= MAX_RESULT_TEXT_CHARS:
            continue
        if not (_number(value) or _text(value)):
            return f"`point.{shorten(name)}` should be a number or a string"
    return None


def _device(device: dict) -> str | None:
    if not isinstance(device, dict):
        return "`device` should be an object"     # checked here: one call less
    name = device.get("name")
    if name is not None and not _text(name):
        return "`device.name` should be a string"
    return None


def _count(value) -> bool:
    return type(value) is int and value >= 0


def _times(values, most: int) -> bool:
    return (isinstance(values, list) and len(values) <= most
            and all(_number(v) and v >= 0 for v in values))


def _timing(timing: dict) -> str | None:
    if not isinstance(timing, dict):
        return "`timing` should be an object"     # checked here: one call less
    for key, value in timing.items():
        if value is None:
            continue
        if key in _TIME_KEYS:
            if not ((type(value) is float or type(value) is int or _number(value))
                    and value >= 0):
                return f"`timing.{key}` should be a number >= 0"
        elif key == "samples" and not _count(value):
            return "`timing.samples` should be a count"
        elif key == "processes" and not (_count(value) and 1 <= value <= MAX_PROCESSES):
            return f"`timing.processes` should be a count from 1 to {MAX_PROCESSES}"
        elif key == "process_medians_us" and not _times(value, MAX_PROCESSES):
            return (f"`timing.process_medians_us` should be a list of at most {MAX_PROCESSES} "
                    "times >= 0")
        elif key == "samples_us" and not _times(value, MAX_RESULT_SAMPLES):
            return (f"`timing.samples_us` should be a list of at most {MAX_RESULT_SAMPLES} "
                    "times >= 0")
    return None


def _energy(energy: dict) -> str | None:
    if not isinstance(energy, dict):
        return "`energy` should be an object"     # checked here: one call less
    for key in _ENERGY_KEYS & energy.keys():
        if energy[key] is not None and not (_number(energy[key]) and energy[key] >= 0):
            return f"`energy.{key}` should be a number >= 0"
    return None


def _throughput(throughput: dict) -> str | None:
    if not isinstance(throughput, dict):
        return "`throughput` should be an object"     # checked here: one call less
    if not all(v is None or _number(v) for v in throughput.values()):
        return "`throughput` should hold numbers"
    return None


def _pow2(value) -> str | None:
    if not (isinstance(value, list) and all(_text(v) for v in value)):
        return "`pow2` should be a list of var names"
    return None


_FIELD_CHECKS = {
    **{key: _text_field(key) for key in _TEXT_KEYS},
    **{key: _object_field(key) for key in _OBJECT_KEYS},
    "device": _device, "timing": _timing, "energy": _energy, "throughput": _throughput,
    "exit_code": _exit_code, "point": _point, "pow2": _pow2,
}
