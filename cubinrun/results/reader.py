"""Read results back: a `launch --json` document (one result, or
`{"results": [...], "summary": {...}}`) or a `--jsonl` file (one result per
line), as a list of result objects. `compare` and `plot` read through here.

Results written before sweeps existed have no `spec` or `point`: they get
`spec: null` (matched by kernel alone) and an empty point.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError


def read_results(path: str | Path) -> list[dict]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None
    try:
        document = json.loads(text)
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
            results.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not JSON or JSON lines ({exc.msg})") from None
    return results


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
