"""What a platform lacks, as skips that say why: SciPy under Wine, POSIX-only
means on Windows, Wine's differences from Windows, and a GPU."""
from __future__ import annotations

import functools
import importlib.util
import sys

import pytest

# SciPy decides compare's verdicts. The Wine stage (.ci/wine) has none: every
# cp313 SciPy wheel's OpenBLAS calls ucrtbase.crealf as it loads, which Wine 8
# lacks (Windows has it). Tests that need it say so with this mark.
needs_scipy = pytest.mark.skipif(
    importlib.util.find_spec("scipy") is None,
    reason="needs SciPy (absent under Wine 8: its OpenBLAS calls ucrtbase.crealf)")


@functools.lru_cache(maxsize=None)
def under_wine() -> bool:
    """Windows Python run by Wine (.ci/wine): ntdll exports wine_get_version."""
    if sys.platform != "win32":
        return False
    import ctypes
    return hasattr(ctypes.WinDLL("ntdll"), "wine_get_version")


def skip_under_wine(why: str) -> None:
    """Skip where Wine differs from Windows (real Windows is expected to pass)."""
    if under_wine():
        pytest.skip(f"Wine differs from Windows: {why}")


def skip_on_windows(why: str) -> None:
    """Skip a test whose means are POSIX-only by nature (a #! script standing in
    for a tool, a shell-script compiler, dlopen, FIFOs), saying which."""
    if sys.platform == "win32":
        pytest.skip(f"POSIX only: {why}")


@functools.lru_cache(maxsize=None)
def gpu_available() -> bool:
    try:
        from cuda.bindings import driver
        err, = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, count = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and count > 0
    except Exception:                       # no driver library at all
        return False
