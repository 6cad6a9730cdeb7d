"""Invalid points of a sweep (SPEC section 5): a point whose build or load hits
a resource limit of the kernel is reported `invalid` with its reason; exit 3,
or 0 with `sweep_invalid: skip`. On the CPU: NVRTC refusing a static
__shared__ array too large for sm_90 (a dry run), and the fake driver
reporting a kernel's thread limit (a launch)."""
from __future__ import annotations

import json

import pytest
from support.cli import run as run_cli
from support.fake_runs import FAST, in_process  # noqa: F401  (fixtures)
from support.specs import spec_copy

from cubinrun.errors import EXIT_BUILD, EXIT_OK
from support.repo import REPO

KERNEL = """\
extern "C" __global__ void stage(float *x, int n) {
  __shared__ float tile[SMEM];              // SMEM floats of static shared memory
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x % SMEM] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) x[i] = tile[(threadIdx.x + 1) % SMEM];
}
"""

SPEC = """\
kernel:
  source: stage.cu
  name: stage
  options: ["-DSMEM={SMEM}"]
  arch: sm_90
signature: {x: "*fp32", n: i32}
vars: {N: 4096, SMEM: 1024}
args:
  x: {shape: [N], init: random}
  n: N
grid: [cdiv(N, 128)]
block: [128]
sweep:
  SMEM: [1024, 65536]          # 256 KiB of static shared memory: above sm_90's 48 KiB
"""


@pytest.mark.parametrize("policy, code", [("", EXIT_BUILD), ("sweep_invalid: skip\n", EXIT_OK)])
def test_a_point_ptxas_refuses_for_shared_memory_is_invalid(tmp_path, capsys, policy, code):
    (tmp_path / "stage.cu").write_text(KERNEL)
    spec = tmp_path / "stage.yaml"
    spec.write_text(SPEC + policy)
    got, out, err = run_cli(capsys, "launch", "--dry-run", "--json", spec)
    results = json.loads(out)["results"]
    assert got == code and [r["status"] for r in results] == ["dry-run", "invalid"]
    invalid = results[1]
    assert invalid["exit_code"] == code and invalid["error"]["type"] == "invalid"
    assert invalid["error"]["message"] == ("stage needs 262144 bytes of shared data, more than "
                                           "the 49152 the target allows")
    assert err.strip() == f"invalid: {spec} [SMEM=65536]: {invalid['error']['message']}"


def test_outside_a_sweep_the_same_build_is_a_build_error(tmp_path, capsys):
    (tmp_path / "stage.cu").write_text(KERNEL)
    spec = tmp_path / "stage.yaml"
    spec.write_text(SPEC.split("sweep:")[0])
    got, out, err = run_cli(capsys, "launch", "--dry-run", spec, "--set", "SMEM=65536")
    assert got == EXIT_BUILD and "uses too much shared data" in err


@pytest.mark.parametrize("policy, code", [("", EXIT_BUILD), ("sweep_invalid: skip\n", EXIT_OK)])
def test_a_block_above_the_loaded_kernels_limit_is_invalid(device, in_process, tmp_path, capsys,
                                                           monkeypatch, policy, code):
    limits = {"MAX_THREADS_PER_BLOCK": 256, "NUM_REGS": 128}     # what heavy register use gives
    monkeypatch.setattr(type(device), "cuFuncGetAttribute",
                        lambda self, attribute, function:
                        limits.get(attribute.name.removeprefix("CU_FUNC_ATTRIBUTE_"), 0))
    spec = spec_copy(tmp_path, "warps.yaml", {"num_warps: 4": "num_warps: W",
                                              "BLOCK: 1024": "BLOCK: 1024\n  W: 4",
                                              "expect: x + y": "expect: 0 * x",
                                              "N: 1048576": "N: 4096"})
    spec.write_text(spec.read_text() + "sweep:\n  W: [4, 16]\n" + policy)
    got, out, err = run_cli(capsys, "launch", "--json", spec, *FAST)
    results = json.loads(out)["results"]
    assert got == code and [r["status"] for r in results] == ["ok", "invalid"]
    assert results[1]["error"] == {"type": "invalid", "message":
                                   "512 threads per block exceed add_kernel's maximum of 256 "
                                   "(set by __launch_bounds__ or its register use)"}
    assert f"invalid: {spec} [W=16]: 512 threads per block" in err


def test_the_tiled_copy_sample_dry_runs_with_skipped_and_invalid_points(capsys):
    # a slice of configs/sweeps/tiled_copy.yaml (each point is an NVRTC compile)
    sample = REPO / "configs" / "sweeps" / "tiled_copy.yaml"
    got, out, err = run_cli(capsys, "launch", "--dry-run", "--json", sample, "--axis",
                            "TILE=[64,128]", "--axis", "ROWS=[8,16]", "--set", "T='fp32'")
    results = json.loads(out)["results"]
    assert got == EXIT_OK
    assert [(r["point"]["VARIANT"], r["point"]["TILE"], r["point"]["ROWS"], r["status"])
            for r in results] == [
        ("naive", 64, 8, "dry-run"), ("naive", 64, 16, "dry-run"), ("naive", 128, 8, "dry-run"),
        ("naive", 128, 16, "skipped"), ("shared", 64, 8, "dry-run"), ("shared", 64, 16, "dry-run"),
        ("shared", 128, 8, "invalid"), ("shared", 128, 16, "skipped")]
    assert results[3]["constraint"] == "TILE * ROWS <= 1024"
    assert err.count("\n") == 1 and "needs 66048 bytes of shared data" in err


def test_a_launched_sweep_lists_skipped_points_in_every_result_file(device, in_process, tmp_path,
                                                                     capsys):
    import xml.etree.ElementTree as ET
    spec = spec_copy(tmp_path, "passing.yaml", {"expect: x + y": "expect: 0 * x",
                                                "N: 1048576": "N: 4096"})
    jsonl, junit = tmp_path / "r.jsonl", tmp_path / "j.xml"
    got, out, err = run_cli(capsys, "launch", spec, "--axis", "N=[1024,2048,4096]",
                            "--constraint", "N != 2048", *FAST, "--jsonl", jsonl, "--junit", junit)
    assert got == EXIT_OK and err == ""
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [(r["point"]["N"], r["status"], r.get("constraint")) for r in lines] == [
        (1024, "ok", None), (2048, "skipped", "N != 2048"), (4096, "ok", None)]
    assert "timing" not in lines[1] and lines[1]["exit_code"] == 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("skipped") == "1" and suite.get("failures") == "0"
    case = suite.findall("testcase")[1]
    assert case.find("skipped").get("message") == "skipped: constraint N != 2048"
    assert "skipped" in out and out.strip().splitlines()[-1].startswith("3 runs: 2 ok, 1 skipped")


HEAVY = """\
extern "C" __global__ void heavy(const float *x, float *out, int n) {
  float acc[ACC];                            // ACC live values: ~168 registers for 128
  #pragma unroll
  for (int k = 0; k < ACC; ++k) acc[k] = x[(threadIdx.x * ACC + k) % n];
  for (int it = 0; it < n; ++it) {
    #pragma unroll
    for (int k = 0; k < ACC; ++k) acc[k] = acc[k] * acc[(k + 1) % ACC] + x[(it + k) % n];
  }
  float s = 0;
  #pragma unroll
  for (int k = 0; k < ACC; ++k) s += acc[k];
  if (blockIdx.x * blockDim.x + threadIdx.x < n) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def test_a_block_too_big_for_the_kernels_registers_is_invalid_in_a_dry_run(tmp_path, capsys):
    # found from the cubin's register count, as the driver would refuse the launch
    (tmp_path / "heavy.cu").write_text(HEAVY)
    spec = tmp_path / "heavy.yaml"
    spec.write_text("""\
kernel: {source: heavy.cu, name: heavy, options: ["-DACC=128"], arch: sm_90}
signature: {x: "*kfp32", out: "*fp32", n: i32}
vars: {N: 4096, B: 256}
args: {x: {shape: [N]}, out: {shape: [N]}, n: N}
grid: [cdiv(N, B)]
block: [B]
sweep: {B: [256, 1024]}
sweep_invalid: skip
""")
    got, out, err = run_cli(capsys, "launch", "--dry-run", "--json", spec)
    results = json.loads(out)["results"]
    assert got == EXIT_OK and [r["status"] for r in results] == ["dry-run", "invalid"]
    registers = results[0]["binary"]["registers"]
    per_warp = -(-registers * 32 // 256) * 256
    assert registers > 64 and results[1]["error"]["message"] == (
        f"1024 threads per block exceed the {65536 // per_warp * 32} that heavy's {registers} "
        f"registers per thread allow (65536 per block)")
