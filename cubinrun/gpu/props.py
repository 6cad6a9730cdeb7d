"""Device properties for `cubinrun props`, read from one table.

Each row names a property, the driver attribute it comes from and its unit;
a few derived rows (peak bandwidth, fp32 peak) are computed from the others.
Formatting is separate from reading, so it can be tested with fixed values.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import driver
from ..text import human_bytes


@dataclass(frozen=True)
class Property:
    key: str                  # JSON key
    label: str                # table label
    attribute: str | None     # CU_DEVICE_ATTRIBUTE_<attribute>; None for derived rows
    unit: str = ""            # "B", "KiB", "kHz", "bit", "" ...


PROPERTIES: tuple[Property, ...] = (
    Property("sm_count", "multiprocessors", "MULTIPROCESSOR_COUNT"),
    Property("sm_clock_khz", "SM clock (max)", "CLOCK_RATE", "kHz"),
    Property("memory_clock_khz", "memory clock", "MEMORY_CLOCK_RATE", "kHz"),
    Property("memory_bus_bits", "memory bus width", "GLOBAL_MEMORY_BUS_WIDTH", "bit"),
    Property("l2_bytes", "L2 cache", "L2_CACHE_SIZE", "B"),
    Property("shared_per_block", "shared memory per block", "MAX_SHARED_MEMORY_PER_BLOCK", "B"),
    Property("shared_per_block_optin", "shared memory per block (opt-in)",
             "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "B"),
    Property("shared_per_sm", "shared memory per SM", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", "B"),
    Property("registers_per_block", "registers per block", "MAX_REGISTERS_PER_BLOCK"),
    Property("registers_per_sm", "registers per SM", "MAX_REGISTERS_PER_MULTIPROCESSOR"),
    Property("warp_size", "warp size", "WARP_SIZE"),
    Property("max_threads_per_block", "max threads per block", "MAX_THREADS_PER_BLOCK"),
    Property("max_threads_per_sm", "max threads per SM", "MAX_THREADS_PER_MULTIPROCESSOR"),
    Property("max_block_x", "max block x", "MAX_BLOCK_DIM_X"),
    Property("max_block_y", "max block y", "MAX_BLOCK_DIM_Y"),
    Property("max_block_z", "max block z", "MAX_BLOCK_DIM_Z"),
    Property("max_grid_x", "max grid x", "MAX_GRID_DIM_X"),
    Property("max_grid_y", "max grid y", "MAX_GRID_DIM_Y"),
    Property("max_grid_z", "max grid z", "MAX_GRID_DIM_Z"),
    Property("cluster_launch", "cluster launch", "CLUSTER_LAUNCH", "bool"),
    Property("cooperative_launch", "cooperative launch", "COOPERATIVE_LAUNCH", "bool"),
    Property("ecc", "ECC", "ECC_ENABLED", "bool"),
    Property("pci_domain", "PCI domain", "PCI_DOMAIN_ID", "hex"),
    Property("pci_bus", "PCI bus", "PCI_BUS_ID", "hex"),
    Property("pci_device", "PCI device", "PCI_DEVICE_ID", "hex"),
)

# FP32 lanes per SM by compute capability major (minor where it differs).
FP32_LANES_PER_SM = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
                     (9, 0): 128, (10, 0): 128, (10, 3): 128, (12, 0): 128, (12, 1): 128}


def peak_bandwidth_gbps(memory_clock_khz: int | None, bus_bits: int | None) -> float | None:
    """Double data rate x bus width: the datasheet-style peak in GB/s."""
    if not memory_clock_khz or not bus_bits:
        return None
    return 2 * memory_clock_khz * 1e3 * bus_bits / 8 / 1e9


def peak_fp32_tflops(capability: tuple[int, int], sm_count: int | None,
                     sm_clock_khz: int | None) -> float | None:
    lanes = FP32_LANES_PER_SM.get(tuple(capability))
    if not lanes or not sm_count or not sm_clock_khz:
        return None
    return 2 * lanes * sm_count * sm_clock_khz * 1e3 / 1e12


def nvidia_driver_release() -> str | None:
    """The kernel module's version string (e.g. 580.159.04), where Linux shows it."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return None


def _attribute_or_none(handle, attribute: str) -> int | None:
    """Some attributes are retired in newer drivers; a missing one reads as None."""
    from ..errors import CudaError
    try:
        return driver.device_attribute(handle, attribute)
    except (CudaError, AttributeError):
        return None


def collect(ordinal: int) -> dict:
    """Every property of one device as a JSON-ready dict."""
    device = driver.get_device(ordinal)
    values = {p.key: _attribute_or_none(device.handle, p.attribute) for p in PROPERTIES}
    version = driver.driver_version()
    return {
        "ordinal": ordinal,
        "name": device.name,
        "compute_capability": f"{device.capability[0]}.{device.capability[1]}",
        "arch": device.arch,
        "memory_bytes": driver.device_total_memory(device.handle),
        **values,
        "peak_bandwidth_gbps": peak_bandwidth_gbps(values["memory_clock_khz"],
                                                   values["memory_bus_bits"]),
        "peak_fp32_tflops": peak_fp32_tflops(device.capability, values["sm_count"],
                                             values["sm_clock_khz"]),
        "pci_bus_id": driver.device_pci_bus_id(device.handle),
        "cuda_driver_version": f"{version // 1000}.{version % 1000 // 10}",
        "nvidia_driver": nvidia_driver_release(),
        "power_limit_w": power_limit_w(driver.device_uuid(device.handle)),
    }


def power_limit_w(uuid: str) -> float | None:
    """The board's enforced power limit from NVML, read only; None without
    nvidia-ml-py or when NVML cannot tell (props works without NVML)."""
    from . import nvml
    from ..errors import CudaError
    if not nvml.available():
        return None
    try:
        return nvml.power_limit_w(nvml.device(uuid))
    except CudaError:
        return None


def device_values(device) -> dict[str, int]:
    """What a spec's expressions may name (specfile/device_values.py), read from `device`."""
    from ..specfile.device_values import arch_number
    attr = lambda name: driver.device_attribute(device.handle, name)  # noqa: E731
    return {"sm_count": attr("MULTIPROCESSOR_COUNT"), "l2_bytes": attr("L2_CACHE_SIZE"),
            "max_shared_optin": attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            "warp_size": attr("WARP_SIZE"), "arch": arch_number(device.arch)}


def device_values_of(ordinal: int):
    """spec.device_values.DeviceValues of device `ordinal`, opened only when a
    spec names one (for commands that read a spec outside a run: profile,
    repro, the parent of `--sanitize`)."""
    from ..specfile.device_values import DeviceValues
    return DeviceValues(lambda: device_values(driver.open_device(ordinal)), f"device {ordinal}")


def collect_all(ordinal: int | None) -> list[dict]:
    count = driver.init()
    ordinals = range(count) if ordinal is None else [ordinal]
    return [collect(i) for i in ordinals]


def format_value(value, unit: str) -> str:
    """How a property value reads in the table."""
    if value is None:
        return "n/a"
    if unit == "B":
        return human_bytes(value) if value >= 1024 else f"{value} B"
    if unit == "kHz":
        return f"{value / 1000:.0f} MHz"
    if unit == "bit":
        return f"{value} bit"
    if unit == "bool":
        return "yes" if value else "no"
    if unit == "hex":
        return f"{value:#x}"
    return f"{value:,}"


def table_rows(info: dict) -> list[tuple[str, str]]:
    """(label, text) rows for one device, in the table's order."""
    rows = [("name", info["name"]),
            ("compute capability", f"{info['compute_capability']} ({info['arch']})"),
            ("memory", human_bytes(info["memory_bytes"]))]
    rows += [(p.label, format_value(info[p.key], p.unit)) for p in PROPERTIES]
    bandwidth = info["peak_bandwidth_gbps"]
    rows.append(("peak memory bandwidth", f"{bandwidth:,.0f} GB/s" if bandwidth else "n/a"))
    tflops = info["peak_fp32_tflops"]
    rows.append(("peak fp32 (FMA)", f"{tflops:.1f} TFLOP/s" if tflops else "n/a"))
    rows += [("PCI bus id", info["pci_bus_id"]),
             ("CUDA driver API", info["cuda_driver_version"]),
             ("NVIDIA driver", info["nvidia_driver"] or "n/a")]
    limit = info.get("power_limit_w")
    rows.append(("power limit", f"{limit:.0f} W" if limit else "n/a"))
    return rows
