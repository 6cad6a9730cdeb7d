"""Every NVML call cubinrun makes, through nvidia-ml-py (`pynvml`), read-only.

All of them go through `call(name, *args)`, the one error check: an NVMLError
becomes a CudaError naming the call, and a missing nvidia-ml-py one line with
the pip command. cubinrun only reads: it never sets clocks, power limits or
modes (on a shared GPU machine those are the administrator's).
"""
from __future__ import annotations

import functools
from typing import Any

from ..errors import CudaError

INSTALL = "pip install 'cubinrun[energy]' (nvidia-ml-py)"


@functools.lru_cache(maxsize=None)
def _pynvml():
    try:
        import pynvml
    except ImportError as e:
        raise CudaError(f"--energy needs nvidia-ml-py, which is not importable ({e}): {INSTALL}",
                        call="import pynvml") from None
    return pynvml


def available() -> bool:
    """Whether nvidia-ml-py is installed (optional readings skip NVML without it)."""
    try:
        _pynvml()
    except CudaError:
        return False
    return True


def call(name: str, *args) -> Any:
    """`pynvml.<name>(*args)`; an NVML error becomes a CudaError naming the call."""
    nv = _pynvml()
    try:
        return getattr(nv, name)(*args)
    except nv.NVMLError as e:
        raise CudaError(f"{name} failed: {e}", call=name) from None


@functools.lru_cache(maxsize=None)
def _init() -> None:
    call("nvmlInit")                  # once per process; NVML counts its users


def device(uuid: str):
    """NVML's handle of the device with this UUID (driver.device_uuid): the
    same GPU as the CUDA device whatever CUDA_VISIBLE_DEVICES renumbered."""
    _init()
    return call("nvmlDeviceGetHandleByUUID", uuid)


def energy_mj(handle) -> int:
    """Energy the board used since the driver loaded, in mJ (Volta and later;
    updated every ~20-100 ms)."""
    return call("nvmlDeviceGetTotalEnergyConsumption", handle)


def sm_clock_mhz(handle) -> int:
    return call("nvmlDeviceGetClockInfo", handle, _pynvml().NVML_CLOCK_SM)


def power_limit_w(handle) -> float:
    """The power limit the board enforces now, in W."""
    return call("nvmlDeviceGetEnforcedPowerLimit", handle) / 1000.0
