"""One flat row per result: what the summary table, CSV and Markdown show."""
from __future__ import annotations

from typing import Any


def point_text(point: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


def throughput(result: dict) -> tuple[float | None, str, float | None]:
    """(value, unit, fraction of the device's peak): GB/s if the spec gave bytes,
    else TFLOP/s if it gave flops."""
    t = result.get("throughput") or {}
    if t.get("gbps") is not None:
        return t["gbps"], "GB/s", t.get("bandwidth_fraction")
    if t.get("tflops") is not None:
        return t["tflops"], "TFLOP/s", t.get("fp32_fraction")
    return None, "", None


# what a run checks besides its outputs (launch's debugging aids), by JSON key
DEBUG_CHECKS = (("guards", "guard bands"), ("repeat", "repeat"), ("sanitizer", "sanitizer"))


def failed_checks(result: dict) -> list[str]:
    """What failed in a run: each output whose check failed, the guard bands,
    --repeat's comparison, the sanitizer (by tool). Each counts as a failed check."""
    check = result.get("check") if isinstance(result.get("check"), dict) else {}
    outputs = check.get("outputs") if isinstance(check.get("outputs"), dict) else {}
    failed = [f"check {name}" for name, output in outputs.items()
              if isinstance(output, dict) and output.get("passed") is False]
    for key, label in DEBUG_CHECKS:
        part = result.get(key)
        if isinstance(part, dict) and part.get("passed") is False:
            failed.append((part.get("tool") or label) if key == "sanitizer" else label)
    if check.get("passed") is False and not failed:
        failed.append("check")              # check.passed also counts guards and repeat
    return failed


def check_word(result: dict) -> str:
    """pass, FAIL or - (nothing was checked)."""
    if failed_checks(result):
        return "FAIL"
    passed = [(result.get("check") or {}).get("passed")]
    passed += [(result.get(key) or {}).get("passed") for key, _ in DEBUG_CHECKS
               if isinstance(result.get(key), dict)]
    return "pass" if True in passed else "-"


def row(result: dict) -> dict[str, Any]:
    timing = result.get("timing") or {}
    energy = result.get("energy") or {}
    value, unit, fraction = throughput(result)
    compare = result.get("compare") or {}
    return {
        "spec": result.get("spec") or "",
        "point": point_text(result.get("point") or {}),
        "kernel": result.get("kernel") or "",
        "median_us": timing.get("median_us"),
        "throughput": value, "unit": unit,
        "peak_fraction": fraction,
        "check": check_word(result),
        "status": result.get("status") or ("ok" if result.get("exit_code", 0) == 0 else
                                           f"exit {result.get('exit_code')}"),
        "verdict": compare.get("verdict"),
        "ratio": compare.get("ratio"),
        "j_per_launch": energy.get("j_per_launch"),
        "watts": energy.get("watts"),
        "energy_ratio": compare.get("energy_ratio"),
        "throttled_samples": timing.get("throttled_samples"),
        "processes": timing.get("processes"),
        "process_spread": timing.get("process_spread"),
        "too_noisy": timing.get("too_noisy"),
        "error": (result.get("error") or {}).get("message"),
    }


def number(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def percent(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def device_labels(results: list[dict]) -> list[str] | None:
    """Which GPU ran each result (`0`, or `host:0` across hosts), when the
    results ran on more than one (--devices, --ray); else None."""
    devices = [r.get("device") or {} for r in results]
    hosts = {d.get("host") for d in devices if d.get("host")}
    labels = [(f"{d['host']}:" if len(hosts) > 1 and d.get("host") else "")
              + str(d.get("ordinal", "")) for d in devices]
    return labels if len({(d.get("host"), d.get("uuid")) for d in devices}) > 1 else None


def spread_text(flat: dict) -> str:
    """The between-process spread of a run gathered in several processes:
    `2.1% of 4`, `12.4% of 4, too noisy` (to judge a 3% change)."""
    if not flat.get("processes") or flat["processes"] < 2 or flat.get("process_spread") is None:
        return ""
    return f"{percent(flat['process_spread'])} of {flat['processes']}" + (
        ", too noisy" if flat.get("too_noisy") else "")


def any_processes(results: list[dict]) -> bool:
    return any(((r.get("timing") or {}).get("processes") or 1) > 1 for r in results)
