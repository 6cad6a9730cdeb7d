"""Device values in expressions: `sm_count`, `l2_bytes`, `max_shared_optin`,
`arch` (a number: 90 for sm_90 and sm_90a) and `warp_size`.

A persistent kernel launches `min(sm_count, tiles)` programs, so grids, vars,
args and bench may name the device's properties. Where they come from:

- a launch: the device it runs on, read when a spec first names one (the
  driver is asked only then, so specs that name none wait for nothing);
- a dry run: a saved `cubinrun props --json` file (`--props FILE`), else the
  values of a known GPU for `--arch` (KNOWN_GPUS), else nowhere, and a spec
  that names one is refused with a line saying how to provide them.

The loader asks `DeviceValues.get` for a name that is no var or scalar arg
(a var of the same name wins: it is the spec's own), and the spec records
which values it used, so the plan and the report show them.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Mapping

from ..errors import SpecError, UsageError, excerpt

DEVICE_NAMES = ("sm_count", "l2_bytes", "max_shared_optin", "arch", "warp_size")

# `cubinrun props --json` keys of each name (arch: "sm_90" there, 90 here)
PROPS_KEYS = {"sm_count": "sm_count", "l2_bytes": "l2_bytes",
              "max_shared_optin": "shared_per_block_optin", "arch": "arch",
              "warp_size": "warp_size"}

# What `--arch` stands for in a dry run: the datacenter GPU of each arch
# (cudaDeviceProp of that model; --props FILE for any other).
KNOWN_GPUS: dict[str, tuple[str, dict[str, int]]] = {
    "sm_80": ("A100 SXM", {"sm_count": 108, "l2_bytes": 40 << 20,
                           "max_shared_optin": 166912, "warp_size": 32}),
    "sm_90": ("H100 SXM", {"sm_count": 132, "l2_bytes": 50 << 20,   # an H200: 60 MiB
                                  "max_shared_optin": 232448, "warp_size": 32}),
}

MAX_PROPS_BYTES = 1 << 20


def arch_number(arch: str) -> int:
    """90 for "sm_90" and "sm_90a"."""
    digits = arch.removeprefix("sm_").rstrip("af")
    # ASCII and short: int() takes other scripts' digits and refuses 4300 of them
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 4):
        raise UsageError(f"{excerpt(arch)} is not an arch such as sm_90")
    return int(digits)


class DeviceValues:
    """The device values a spec may name, from `fetch()` (called once, when a
    spec first names one) or refused with `missing` (how to provide them)."""

    def __init__(self, fetch: Callable[[], Mapping[str, int]] | None, source: str,
                 missing: str = ""):
        self._fetch = fetch
        self._values: Mapping[str, int] | None = None
        self.source = source            # for the plan: "device 0 (NVIDIA H200)", "--props f.json"
        self.missing = missing

    def get(self, name: str) -> int:
        if self._fetch is None:
            raise SpecError(f"{name} is a device value and {self.missing}")
        if self._values is None:
            self._values = dict(self._fetch())
        value = self._values.get(name)
        if value is None:
            raise SpecError(f"{name} is a device value that {self.source} does not give")
        return value


def unavailable(why: str = "a dry run has no GPU") -> DeviceValues:
    return DeviceValues(None, "", f"{why}: pass --props FILE (saved from `cubinrun props "
                                  f"--json`) or --arch ({', '.join(KNOWN_GPUS)}: the values of "
                                  f"{' or '.join(gpu for gpu, _ in KNOWN_GPUS.values())})")


def for_arch(arch: str) -> DeviceValues:
    """The values of the known GPU of `arch` (sm_90a as sm_90)."""
    key = f"sm_{arch_number(arch)}"
    if key not in KNOWN_GPUS:
        return DeviceValues(None, "", f"cubinrun knows no GPU of {arch} (known: "
                                      f"{', '.join(KNOWN_GPUS)}): pass --props FILE, saved "
                                      "from `cubinrun props --json` on that GPU")
    gpu, values = KNOWN_GPUS[key]
    return DeviceValues(lambda: {**values, "arch": arch_number(key)},
                        f"--arch {arch} (an {gpu})")


def from_props_file(path: str, ordinal: int | None = None) -> DeviceValues:
    """A saved `cubinrun props --json` ({"devices": [...]}) or one device's object."""
    from ..files import read_bounded
    try:                            # bounded, and a FIFO is refused rather than waited on
        data = read_bounded(path, MAX_PROPS_BYTES, "props")
    except SpecError as exc:
        raise UsageError(f"--props {exc}") from None
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise UsageError(f"--props {path}: not JSON (save it with `cubinrun props "
                         "--json > FILE`)") from None
    devices = document.get("devices", [document]) if isinstance(document, dict) else None
    if not isinstance(devices, list) or not devices or not all(isinstance(d, dict)
                                                               for d in devices):
        raise UsageError(f"--props {path}: expected the output of `cubinrun props --json`")
    index = ordinal or 0
    if index >= len(devices):
        raise UsageError(f"--props {path}: no device {index} ({len(devices)} in the file)")
    device = devices[index]
    values = {}
    for name, key in PROPS_KEYS.items():
        value = device.get(key)
        if name == "arch" and isinstance(value, str):
            try:
                value = arch_number(value)
            except UsageError as exc:
                raise UsageError(f"--props {path}: device {index}: arch: {exc}") from None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            values[name] = value
    label = device.get("name") if isinstance(device.get("name"), str) else f"device {index}"
    return DeviceValues(lambda: values, f"--props {Path(path).name} ({label[:60]})")
