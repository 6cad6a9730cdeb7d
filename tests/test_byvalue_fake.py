"""Kernels without parameters and parameters passed by value as structs,
arrays and vectors, launched through the generated launcher and the fake
libcuda (tests/fakecuda), which records the exact bytes of every parameter."""
from __future__ import annotations

import json

from test_run_fake import CONFIGS, device, fake_libcuda, run_cli  # noqa: F401 (fixtures)


def test_a_kernel_without_parameters_launches(device, fake_libcuda, capsys):
    fake_libcuda.set_param_sizes([])
    code, out, err = run_cli(capsys, "launch", "--json", CONFIGS / "empty0.yaml",
                             "--rep", "1", "--warmup", "1")
    report = json.loads(out)
    assert code == 0 and err == "" and report["kernel"] == "empty0"
    assert report["check"]["passed"] is None and report["timing"]["samples"] >= 10
    first = fake_libcuda.launches()[0]
    assert first.params == [] and first.grid == (1, 1, 1) and first.block == (32, 1, 1)


def test_a_kernel_without_parameters_in_the_dry_run_table(capsys):
    code, out, _ = run_cli(capsys, "launch", "--dry-run", CONFIGS / "empty0.yaml")
    assert code == 0 and "parameters: none" in out
