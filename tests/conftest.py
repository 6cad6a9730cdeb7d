"""Shared fixtures. GPU tests carry the `gpu` marker and are skipped here
unless a driver and a device answer."""
from __future__ import annotations

import functools
import importlib.util
import sys
import os
import textwrap
from pathlib import Path

import pytest

import cubinrun

REPO = Path(__file__).resolve().parent.parent

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
# Where `import cubinrun` found the package: the checkout for an editable
# install, site-packages for a wheel (.ci/wheel). Subprocesses that must run
# the same package put this on PYTHONPATH, never REPO.
PACKAGE_PARENT = Path(cubinrun.__file__).resolve().parent.parent
# .ci/wheel runs the suite against the installed wheel from outside the checkout;
# then subprocesses started in REPO (`python -m cubinrun`, cwd=REPO) must not
# pick the checkout's package up from their working directory either.
INSTALLED = os.environ.get("CUBINRUN_TEST_INSTALLED") == "1"
if INSTALLED:
    os.environ["PYTHONSAFEPATH"] = "1"


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


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and driver")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Tests never read or write the user's launcher cache."""
    cache = tmp_path_factory.getbasetemp() / "cubinrun-cache"
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(cache))


@pytest.fixture
def write_spec(tmp_path):
    """Write a spec (dedented) beside a dummy cubin and return its path."""
    (tmp_path / "k.cubin").write_bytes(fake_cubin_bytes())

    def write(text: str, name: str = "spec.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


def fake_cubin_bytes() -> bytes:
    """The first bytes of a CUDA ELF: enough for the file-type check."""
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4] = 2                      # 64-bit
    header[5] = 1                      # little endian
    header[18:20] = (190).to_bytes(2, "little")
    return bytes(header)


# The whole launch path on the fake driver (tests/fakecuda): the fake libcuda
# for the launchers, built once per module, and the fake device in place of
# cuda.bindings, fresh per test, expecting the vector add's parameters.
VECTOR_ADD_PARAMS = [8, 8, 8, 4]         # the fake records this many bytes per parameter


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    from fakecuda import fake_driver_env
    with fake_driver_env(tmp_path_factory.mktemp("fakecuda")) as fake:
        yield fake


@pytest.fixture
def device(monkeypatch, fake_libcuda):
    from fakecuda.device import FakeDevice

    from cubinrun.gpu import driver
    fake = FakeDevice(lambda: fake_libcuda.launch_count, fake_libcuda)
    monkeypatch.setattr(driver, "call", fake)
    fake_libcuda.reset()
    fake_libcuda.set_param_sizes(VECTOR_ADD_PARAMS)
    return fake
