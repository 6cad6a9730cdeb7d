"""The device-data wiring on the CPU: `cubinrun launch` on the fake driver with
cubinrun's own kernels (gpu/device_data.py) run by their host build
(tests/hostcxx.py) in place of NVRTC and cuLaunchKernel. The run with the data
drawn and checked "on the device" reports what the forced host path
(CUBINRUN_DATA=host) reports, and the device path really ran."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import hostcxx
from cubinrun.cli import main

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
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
    assert host["check"] == on_device["check"]
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
    assert code_device == code_host == 1 and on_device["check"] == host["check"]


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
