"""The device-data wiring on the CPU: `cubinrun launch` on the fake driver with
cubinrun's own kernels (gpu/device_data.py) run by their host build
(tests/support/hostcxx.py) in place of NVRTC and cuLaunchKernel. The run with the data
drawn and checked "on the device" reports what the forced host path
(CUBINRUN_DATA=host) reports, and the device path really ran."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import hostcxx
from support.hostcxx import same_json
from cubinrun.cli import main

from support.repo import CONFIGS, REPO
pytestmark = pytest.mark.skipif(hostcxx.compiler() is None, reason="no host C++ compiler")


@pytest.fixture
def emulated(monkeypatch):
    return hostcxx.emulate_device_data(monkeypatch)


def run(capsys, monkeypatch, where: str) -> tuple[int, dict]:
    monkeypatch.setenv("CUBINRUN_DATA", where)
    with pytest.raises(SystemExit) as done:
        main(["launch", "--json", str(CONFIGS / "vector_add.yaml"), "--set", "N=70000",
              "--no-bench"])
    return done.value.code, json.loads(capsys.readouterr().out)


def test_device_path_reports_what_the_host_path_reports(device, fake_libcuda, emulated,
                                                        capsys, monkeypatch):
    code_host, host = run(capsys, monkeypatch, "host")
    assert emulated == []                               # forced host: no device kernels
    code_device, on_device = run(capsys, monkeypatch, "device")
    # x uniform and y normal drawn by the device kernels, the check run by cr_check
    assert {"cr_uniform", "cr_normal_segments", "cr_normal_values", "cr_check",
            "cr_check_show"} <= set(emulated)
    assert code_host == code_device == 1                # the fake kernel leaves out zero
    assert same_json(host["check"], on_device["check"])
    assert on_device["check"]["outputs"]["out"]["mismatches"] == 70000


def test_an_input_the_kernel_wrote_sends_its_check_to_the_host(device, fake_libcuda, emulated,
                                                                 capsys, monkeypatch):
    from cubinrun.gpu import device_data
    real = device_data.digest
    seen: dict[int, int] = {}

    def digest(pointer, nbytes, stream):
        value = real(pointer, nbytes, stream)
        seen[pointer] = seen.get(pointer, 0) + 1
        return value + (seen[pointer] > 1)          # the second look finds it changed
    monkeypatch.setattr(device_data, "digest", digest)
    code_device, on_device = run(capsys, monkeypatch, "device")
    assert "cr_uniform" in emulated and "cr_check" not in emulated
    code_host, host = run(capsys, monkeypatch, "host")
    assert code_device == code_host == 1 and same_json(on_device["check"], host["check"])


def test_the_host_makes_no_input_and_no_reference_for_device_work(device, fake_libcuda,
                                                                   emulated, capsys,
                                                                   monkeypatch):
    from cubinrun.hostdata import check, values
    read: list[str] = []
    for name in ("block", "values", "whole"):
        real = getattr(values.InputValues, name)

        def recording(self, *args, _real=real, _name=name):
            read.append(f"{self.buffer.name}.{_name}")
            return _real(self, *args)
        monkeypatch.setattr(values.InputValues, name, recording)
    checkers: list[str] = []
    real_init = check.Checker.__init__

    def made(self, spec, *args, **kwargs):
        checkers.append(spec.name)
        real_init(self, spec, *args, **kwargs)
    monkeypatch.setattr(check.Checker, "__init__", made)
    code, report = run(capsys, monkeypatch, "device")
    assert code == 1 and report["check"]["outputs"]["out"]["mismatches"] == 70000
    assert read == [] and checkers == []      # drawn, launched and checked: nothing on the host


SAVED = """
kernel: {{cubin: {repo}/kernels/build/vector_add.sm_90.cubin, name: add_kernel}}
signature: {{x: "*fp32", y: "*fp32", out: "*fp32", n: i32}}
vars: {{N: 30011}}
args:
  x: {{shape: [N], dtype: {xt}, init: {xi}, save: {folder}/x.npy}}
  y: {{shape: [N], dtype: {yt}, init: {yi}, save: {folder}/y.npy}}
  out: {{shape: [N], dtype: {ot}, init: {oi}, save: {folder}/out.npy}}
  n: N
grid: [1]
launch: {{num_warps: 4}}
"""


@pytest.mark.parametrize("xt,xi,yt,yi,ot,oi,kernels", [
    ("fp16", "random", "bf16", "{random: normal, mean: 2, std: 3}", "fp64", "arange",
     {"cr_uniform", "cr_normal_values", "cr_arange"}),
    ("i8", "{random: uniform, low: -100, high: 27}", "u64", "random", "i64", "{fill: -5}",
     {"cr_int_counts", "cr_int_values", "cr_fill8"}),
    ("fp32", "{random: uniform, low: 10, high: 11, seed: 1}", "i32",
     "{random: normal, std: 1000}", "u1", "random",
     {"cr_uniform", "cr_normal_values", "cr_int_values"}),
])
def test_inputs_drawn_on_the_device_are_the_host_stream(xt, xi, yt, yi, ot, oi, kernels, device,
                                                         fake_libcuda, emulated, capsys,
                                                         monkeypatch, tmp_path):
    """Each buffer's stream (its seed and its position in the spec) drawn by the
    device kernels is saved with the same bytes as the host's."""
    saved = {}
    for where in ("host", "device"):
        folder = tmp_path / where
        spec = tmp_path / f"{where}.yaml"
        spec.write_text(SAVED.format(repo=REPO, xt=xt, xi=xi,
                                     yt=yt, yi=yi, ot=ot, oi=oi, folder=folder))
        monkeypatch.setenv("CUBINRUN_DATA", where)
        with pytest.raises(SystemExit) as done:
            main(["launch", "--json", str(spec), "--no-bench"])
        capsys.readouterr()
        assert done.value.code == 0
        saved[where] = {name: (folder / f"{name}.npy").read_bytes() for name in ("x", "y", "out")}
    assert kernels <= set(emulated)
    assert saved["host"] == saved["device"]


def test_launch_kernel_hands_the_driver_a_pointer_to_each_arguments_bytes(monkeypatch):
    import ctypes
    from cubinrun.gpu import driver
    seen = {}

    def call(name, *args, context=""):
        function, gx, gy, gz, bx, by, bz, shared, stream, params, extra = args
        pointers = (ctypes.c_void_p * 3).from_address(params)
        seen.update(name=name, grid=(gx, gy, gz), block=(bx, by, bz), stream=stream,
                    extra=extra, values=(
                        ctypes.c_uint64.from_address(pointers[0]).value,
                        ctypes.c_double.from_address(pointers[1]).value,
                        ctypes.c_void_p.from_address(pointers[2]).value))
    monkeypatch.setattr(driver, "call", call)
    driver.launch_kernel("f", 7, 256, [ctypes.c_uint64(2**63 + 1), ctypes.c_double(0.25),
                                       ctypes.c_void_p(0xABC0)], 0x5)
    assert seen == {"name": "cuLaunchKernel", "grid": (7, 1, 1), "block": (256, 1, 1),
                    "stream": 0x5, "extra": 0, "values": (2**63 + 1, 0.25, 0xABC0)}


def test_a_bad_cubinrun_data_is_a_usage_error(device, fake_libcuda, capsys, monkeypatch):
    monkeypatch.setenv("CUBINRUN_DATA", "gpu")
    with pytest.raises(SystemExit) as done:
        main(["launch", str(CONFIGS / "vector_add.yaml"), "--set", "N=100", "--no-bench"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "CUBINRUN_DATA='gpu': expected device or host" in err
    assert len(err.strip().splitlines()) == 1


def test_without_nvrtc_everything_stays_on_the_host(device, fake_libcuda, capsys, monkeypatch):
    """A device NVRTC cannot build for (no wheel, or too old a one) runs the host
    path: the same report, no error."""
    from cubinrun.binary import nvrtc
    from cubinrun.errors import BuildError

    def missing(*args, **kwargs):
        raise BuildError("NVRTC is not available: pip install nvidia-cuda-nvrtc")
    monkeypatch.setattr(nvrtc, "cached_compile", missing)
    from cubinrun.gpu import device_data
    monkeypatch.setattr(device_data, "_modules", {})     # this test's modules only
    code_device, on_device = run(capsys, monkeypatch, "device")
    code_host, host = run(capsys, monkeypatch, "host")
    assert code_device == code_host == 1 and same_json(on_device["check"], host["check"])


def test_random_integers_the_device_draws_need_no_host_memory(monkeypatch, tmp_path):
    """A 4 GiB random i32 input is not kept whole on the host when the device
    draws it and every check that reads it runs there; a host check reading it
    (`x // 2`), or CUBINRUN_DATA=host, counts it again."""
    from cubinrun.gpu import capacity
    from cubinrun.specfile.loader import load_spec
    text = (CONFIGS / "vector_add.yaml").read_text().replace(
        "../kernels/", f"{CONFIGS.parent}/kernels/").replace(
        "x: {shape: [N], init: random}", "x: {shape: [N], dtype: i32, init: random}")
    spec_path = tmp_path / "ints.yaml"
    for expect, where, kept in [("x + y", "device", False), ("x // 2 + y", "device", True),
                                ("x + y", "host", True)]:
        spec_path.write_text(text.replace("expect: x + y", f"expect: {expect}"))
        monkeypatch.setenv("CUBINRUN_DATA", where)
        spec = load_spec(spec_path, {"N": str(1 << 30)})
        need, parts = capacity.host_need(spec)
        assert any(p.startswith("x 4") for p in parts) == kept, (expect, where, parts)
