"""Read results back: a `launch --json` document (one result, or
`{"results": [...], "summary": {...}}`) or a `--jsonl` file (one result per
line), as a list of result objects. `compare` and `plot` read through here.

Results written before sweeps existed have no `spec` or `point`: they get
`spec: null` (matched by kernel alone) and an empty point.

A results file is input like any other: read with a bound (limits.py), its
nesting and numbers bounded, and every field `compare`, `plot` and the tables
use checked for its type, so an edited or damaged file is one error line.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError, shorten
from ..limits import MAX_RESULT_SAMPLES


def read_results(path: str | Path) -> list[dict]:
    from ..errors import SpecError
    from ..files import read_text
    from ..limits import MAX_RESULTS_BYTES
    path = Path(path)
    try:
        text = read_text(path, MAX_RESULTS_BYTES, "results")
    except SpecError as exc:
        raise UsageError(str(exc)) from None
    try:
        document = _loads(text, path)
    except json.JSONDecodeError:
        results = _json_lines(text, path)
    else:
        if isinstance(document, dict) and isinstance(document.get("results"), list):
            results = document["results"]
        elif isinstance(document, dict):
            results = [document]
        else:
            raise UsageError(f"{path}: not cubinrun results (a JSON {type(document).__name__})")
    for number, result in enumerate(results, 1):
        if not isinstance(result, dict) or not ("kernel" in result or "spec" in result):
            raise UsageError(f"{path}: result {number} is not a cubinrun result")
        if problem := _problem(result):
            raise UsageError(f"{path}: result {number}: {problem}")
        _normalise(result)
    if not results:
        raise UsageError(f"{path}: holds no results")
    return results


def read_many(paths) -> list[dict]:
    return [result for path in paths for result in read_results(path)]


def _json_lines(text: str, path: Path) -> list[dict]:
    results = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            results.append(_loads(line, path))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not JSON or JSON lines ({exc.msg})") from None
    return results


def _loads(text: str, path: Path):
    """json.loads with no NaN or Infinity, and nesting or digits past Python's
    limits as a usage error (JSONDecodeError still means "try JSON lines")."""
    def constant(name):
        raise UsageError(f"{path}: {name} is not a number JSON allows")
    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else shorten(str(exc))
        raise UsageError(f"{path}: not cubinrun results ({why})") from None


_NUMBER_KEYS = ("median_us", "min_us", "max_us", "mean_us", "std_us", "p10_us", "p90_us",
                "sm_clock_mhz", "event_offset_us", "noise")
_ENERGY_KEYS = ("j_per_launch", "watts", "sm_clock_mhz", "window_s", "launch_us")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _problem(result: dict) -> str | None:
    """What is wrong with the types of a result's fields, or None."""
    for key in ("spec", "kernel", "status"):
        if result.get(key) is not None and not isinstance(result[key], str):
            return f"`{key}` should be a string"
    for key in ("device", "timing", "throughput", "check", "compare", "error", "energy"):
        if result.get(key) is not None and not isinstance(result[key], dict):
            return f"`{key}` should be an object"
    if result.get("exit_code") is not None and not (
            isinstance(result["exit_code"], int) and 0 <= result["exit_code"] <= 255):
        return "`exit_code` should be an exit code"
    point = result.get("point")
    if isinstance(point, dict) and not all(isinstance(v, (int, float, str))
                                           for v in point.values()):
        return "`point` should map vars to numbers"
    name = (result.get("device") or {}).get("name")
    if name is not None and not isinstance(name, str):
        return "`device.name` should be a string"
    timing = result.get("timing") or {}
    for key in _NUMBER_KEYS:
        if timing.get(key) is not None and not (_number(timing[key]) and timing[key] >= 0):
            return f"`timing.{key}` should be a number >= 0"
    if timing.get("samples") is not None and not (
            isinstance(timing["samples"], int) and timing["samples"] >= 0):
        return "`timing.samples` should be a count"
    samples = timing.get("samples_us")
    if samples is not None and not (isinstance(samples, list) and len(samples) <= MAX_RESULT_SAMPLES
                                    and all(_number(v) and v >= 0 for v in samples)):
        return "`timing.samples_us` should be a list of times"
    energy = result.get("energy") or {}
    for key in _ENERGY_KEYS:
        if energy.get(key) is not None and not (_number(energy[key]) and energy[key] >= 0):
            return f"`energy.{key}` should be a number >= 0"
    throughput = result.get("throughput") or {}
    if not all(v is None or _number(v) for v in throughput.values()):
        return "`throughput` should hold numbers"
    if result.get("pow2") is not None and not isinstance(result["pow2"], list):
        return "`pow2` should be a list"
    return None


def _normalise(result: dict) -> None:
    result.setdefault("spec", None)
    if not isinstance(result.get("point"), dict):
        result["point"] = {}
    result.setdefault("exit_code", 0)
    result.setdefault("kernel", None)


def point_key(point: dict) -> str:
    """A point as one comparable string (order and int/float spelling ignored)."""
    return json.dumps({k: (int(v) if isinstance(v, float) and v.is_integer() else v)
                       for k, v in sorted(point.items())})
