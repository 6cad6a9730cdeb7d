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


def check_word(result: dict) -> str:
    passed = (result.get("check") or {}).get("passed")
    return "pass" if passed is True else "FAIL" if passed is False else "-"


def row(result: dict) -> dict[str, Any]:
    timing = result.get("timing") or {}
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
