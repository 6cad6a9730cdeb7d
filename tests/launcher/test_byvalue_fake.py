"""Kernels without parameters and parameters passed by value as structs,
arrays and vectors, launched through the generated launcher and the fake
libcuda (tests/fakecuda), which records the exact bytes of every parameter."""
from __future__ import annotations

import json
import struct

from support.cli import run as run_cli
from support.repo import CONFIGS

from cubinrun.gpu.guards import GUARD_BYTES


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


def test_structs_and_vectors_are_passed_as_their_exact_c_bytes(device, fake_libcuda,
                                                                monkeypatch, capsys):
    allocated = {}                                      # bytes -> addresses, in order
    alloc = device.cuMemAlloc
    monkeypatch.setattr(device, "cuMemAlloc",
                        lambda n: allocated.setdefault(n, []).append(alloc(n)) or
                        allocated[n][-1])
    fake_libcuda.set_param_sizes([24, 16, 16, 8, 8])
    code, out, err = run_cli(capsys, "launch", "--json", "--no-bench", CONFIGS / "structs.yaml",
                             "--set", "N=4096")
    assert code == 1 and 4 * 4096 + 2 * GUARD_BYTES in allocated, (code, out, err, allocated)
    # each buffer between two guard bands: the kernel gets the address past the first
    x, y = (a + GUARD_BYTES for a in allocated[4 * 4096 + 2 * GUARD_BYTES])   # p[2], p[3]
    vec_sum, taps_sum = (a + GUARD_BYTES for a in allocated[8 + 2 * GUARD_BYTES])
    p, scale, t, vec_ptr, taps_ptr = fake_libcuda.launches()[0].params
    # struct Saxpy {int n; float alpha; const float *x; float *y;}
    assert p == struct.pack("<ifQQ", 4096, 2.5, x, y)
    assert scale == struct.pack("<4f", 1, 2, 3, 4)      # float4
    # struct Taps {signed char flag; short k[3]; double bias;}: one byte of padding
    assert t == struct.pack("<bx3hd", -7, 1, -2, 3, 0.25)
    assert (vec_ptr, taps_ptr) == (struct.pack("<Q", vec_sum), struct.pack("<Q", taps_sum))
    # no kernel ran, so each check's error is its whole reference: the members'
    # names resolved in the expressions
    outputs = json.loads(out)["check"]["outputs"]
    assert outputs["vec_sum"]["max_abs_err"] == 4321.0
    assert outputs["taps_sum"]["max_abs_err"] == -7 + 10 - 200 + 3000 + 0.25
    assert outputs["p[3]"]["mismatches"] > 0


def test_the_dry_run_plan_lists_each_members_offset(capsys):
    code, out, _ = run_cli(capsys, "launch", "--dry-run", "--json", CONFIGS / "structs.yaml")
    params = json.loads(out)["params"]
    assert code == 0 and [p["type"] for p in params] == [
        "struct[i32,fp32,*kfp32,*fp32]", "fp32x4", "struct[i8,i16[3],fp64]", "*fp64", "*fp64"]
    assert [(m["name"], m["offset"], m["source"]) for m in params[2]["members"]] == [
        ("t[0]", 0, "scalar"), ("t[1][0]", 2, "scalar"), ("t[1][1]", 4, "scalar"),
        ("t[1][2]", 6, "scalar"), ("t[2]", 8, "scalar")]
    assert params[0]["members"][2] == {"name": "p[2]", "type": "*kfp32", "offset": 8,
                                       "source": "buffer", "value": None, "from": "p[2]"}


def test_to_blob_takes_any_object_of_exactly_the_structs_size(fake_libcuda):
    import numpy as np
    import pytest

    from cubinrun.launcher import load_launcher
    module = load_launcher(["struct[i8,fp64]", "fp32x4"])
    config = module.Config(0xF00D, (32, 1, 1))
    fake_libcuda.reset()
    fake_libcuda.set_param_sizes([16, 16])
    vector = np.arange(4, dtype=np.float32)
    module.launch(config, 1, 1, 1, 0, bytearray(range(16)), vector)
    launch = fake_libcuda.launches()[-1]
    assert launch.params == [bytes(range(16)), vector.tobytes()]
    # each blob's storage is aligned as its type (address mod 64 recorded)
    assert launch.param_alignment[0] % 8 == 0 and launch.param_alignment[1] % 16 == 0
    with pytest.raises(ValueError, match=r"argument 0 \(struct\[i8,fp64\]\): expected 16 "
                                         r"bytes, got 3"):
        module.launch(config, 1, 1, 1, 0, b"abc", vector)
    with pytest.raises(TypeError, match=r"argument 1 \(fp32x4\): expected a bytes-like object, "
                                        r"got int"):
        module.launch(config, 1, 1, 1, 0, bytes(16), 7)
