"""Device data on a real GPU (`gpu` marker): inputs drawn by NVRTC-compiled
device_draws.cu equal the host stream bit for bit, and device checks report
what the host check reports on passing and failing outputs, through the whole
`cubinrun launch` (CUBINRUN_DATA=device against CUBINRUN_DATA=host).

Run on the GPU machine: python -m pytest -q -m gpu tests/test_gpu_device_data.py"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

from support.hostcxx import same_json

import numpy as np
import pytest

from cubinrun.dtypes import ELEMENT_TYPES as T
from cubinrun.hostdata.device_draws import DeviceDraw, device_draw
from cubinrun.hostdata.values import input_values
from cubinrun.specfile.model import BufferArg, Init

pytestmark = pytest.mark.gpu
from support.repo import REPO


@pytest.fixture(scope="module")
def context():
    from cubinrun.gpu import driver
    return driver.open_device(0)


@pytest.mark.parametrize("dtype,init", [
    ("fp32", Init("random", seed=1)), ("fp16", Init("random", low=-2.0, high=5.0, seed=2)),
    ("bf16", Init("random", seed=3)), ("fp64", Init("random", distribution="normal", seed=4)),
    ("fp32", Init("random", distribution="normal", mean=1.0, std=0.5, seed=5)),
    ("i8", Init("random", distribution="normal", std=21.0, seed=6)),
    ("i32", Init("arange")), ("fp64", Init("fill", value=0.1)),
])
@pytest.mark.parametrize("n", [1, 4097, 3_000_017])
def test_device_draws_are_the_host_stream(context, dtype, init, n):
    from cubinrun.gpu import device_data, driver
    b = BufferArg("x", T[dtype], (n,), init)
    plan = device_draw(b, 1)
    assert isinstance(plan, DeviceDraw)
    pointer = driver.alloc(b.nbytes)
    try:
        assert device_data.draw(plan, pointer, 0)
        driver.synchronize()
        got = np.empty(n, dtype=T[dtype].numpy_dtype())
        driver.copy_to_host(got, pointer)
    finally:
        driver.free(pointer)
    assert got.tobytes() == input_values(b, 1).whole().tobytes()


def launch(spec: str, where: str, *args: str) -> tuple[int, dict]:
    env = {**os.environ, "CUBINRUN_DATA": where}
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--json", "--no-bench",
                           spec, *args], cwd=REPO, env=env, capture_output=True, text=True)
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("extra", [[], ["--set", "N=1000003"]])
def test_device_checks_report_what_host_checks_report(extra):
    code_d, device = launch("configs/vector_add.yaml", "device", *extra)
    code_h, host = launch("configs/vector_add.yaml", "host", *extra)
    assert code_d == code_h == 0 and same_json(device["check"], host["check"])


def test_a_failing_check_shows_the_same_mismatches(tmp_path):
    spec = (REPO / "configs" / "vector_add.yaml").read_text()
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(spec.replace("cubin: ../kernels", f"cubin: {REPO}/kernels")
                     .replace("expect: x + y,", "expect: x + 1.0001 * y,"))
    code_d, device = launch(str(wrong), "device")
    code_h, host = launch(str(wrong), "host")
    assert code_d == code_h == 1 and same_json(device["check"], host["check"])
    assert device["check"]["outputs"]["out"]["first_mismatches"]


@pytest.mark.parametrize("spec", sorted(p.name for p in (REPO / "configs").glob("*.yaml")))
def test_every_config_reports_the_same_on_both_paths(spec):
    """Whatever each config's inputs and checks are (drawn or made, checked on the
    device, against a kept whole reference or on the host), both paths give the
    same exit code and the same check report."""
    code_d, device = launch(f"configs/{spec}", "device")
    code_h, host = launch(f"configs/{spec}", "host")
    assert code_d == code_h
    assert same_json(device.get("check"), host.get("check"))


@pytest.mark.skipif(not (REPO / "kernels/thirdparty/kernel_tuner/examples/cuda/matmul.cu")
                    .is_file(), reason="kernels/thirdparty/fetch.sh fetches Kernel Tuner's matmul")
def test_a_tune_of_the_matmul_checks_on_the_device(tmp_path):
    """Kernel Tuner's matmul, 6 configurations: every one checked, against the
    reference the host made once and the device keeps."""
    env = {**os.environ, "CUBINRUN_DATA": "device"}
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "tune",
                           "configs/realkernels/kt_matmul_tune.yaml", "--max-evals", "6",
                           "--storage", f"sqlite:///{tmp_path}/tune.db"], cwd=REPO, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
