"""Shared fixtures. GPU tests carry the `gpu` marker and are skipped here
unless a driver and a device answer. What tests import (paths, skips, helpers)
is in tests/support/; tests import that, never this file."""
from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from support.fakes import VECTOR_ADD_PARAMS, fake_cubin_bytes
from support.platforms import gpu_available
from support.repo import INSTALLED

# .ci/wheel runs the suite against the installed wheel from outside the checkout;
# then subprocesses started in REPO (`python -m cubinrun`, cwd=REPO) must not
# pick the checkout's package up from their working directory either.
if INSTALLED:
    os.environ["PYTHONSAFEPATH"] = "1"


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and driver")
    for item in items:
        # the marker, not the keyword: every test under tests/gpu/ has "gpu"
        # among its keywords (its folder's name), GPU test or not
        if item.get_closest_marker("gpu") is not None:
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


# The whole launch path on the fake driver (tests/fakecuda): the fake libcuda
# for the launchers, built once per module, and the fake device in place of
# cuda.bindings, fresh per test, expecting the vector add's parameters.
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
