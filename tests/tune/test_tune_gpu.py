"""`cubinrun tune` on a real GPU: a space where one configuration faults (an
illegal address: its worker is replaced), one computes a wrong result and
one does not compile; the tune goes on, the right configuration wins, the
one that does not compile never reaches the GPU, the report says where the
time went, and a resumed tune measures nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.repo import PACKAGE_PARENT

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")

KERNEL = r"""
extern "C" __global__ void fill(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if VARIANT == 1
    if (i == 0) *(volatile int*)0x10 = 1;          // faults: an illegal address
#elif VARIANT == 3
    this does not compile;
#endif
    if (i < n) out[i] = VARIANT == 2 ? 2.0f : 1.0f;  // 2: a wrong result
}
"""

SPEC = """\
kernel:
  source: fill.cu
  name: fill
  options: ["-DVARIANT={VARIANT}"]
signature: {out: "*fp32", n: i32}
vars: {N: 1048576, BLOCK: 256, VARIANT: 0}
args:
  out: {shape: [N], init: zeros}
  n: N
grid: [cdiv(N, BLOCK)]
block: [BLOCK]
check:
  out: {expect: 1}
sweep:
  VARIANT: [0, 1, 2, 3]
  BLOCK: [128, 256]
"""


def tune(spec, *args) -> tuple[int, dict, str]:
    # this tree's cubinrun first, and whatever else the machine's path holds (carried wheels)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "cubinrun", "tune", str(spec), "--json",
                           "--warmup", "5", "--rep", "20", *args], capture_output=True,
                          text=True, env=env, timeout=600)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


@pytest.mark.gpu
def test_faults_and_wrong_results_do_not_stop_a_tune_on_the_gpu(tmp_path):
    (tmp_path / "fill.cu").write_text(KERNEL)
    spec = tmp_path / "fill.yaml"
    spec.write_text(SPEC)
    code, doc, err = tune(spec, "--strategy", "brute", "--top-k", "2")
    assert code == 0, err
    by_variant = {}
    for e in doc["evaluations"]:
        by_variant.setdefault(e["point"]["VARIANT"], set()).add(e["status"])
    assert by_variant == {0: {"ok"}, 1: {"CUDA error"}, 2: {"check failed"},
                          3: {"build error"}}
    # the build pool found VARIANT=3 failing (all but the first batch go through it):
    # recorded from that build, no run, so no stage of a run
    assert all(e["stages_s"] is None for e in doc["evaluations"]
               if e["point"]["VARIANT"] == 3)
    spent = doc["spent_s"]
    assert spent["compile_ahead"] > 0 and spent["timing"] > 0 and spent["upload"] >= 0
    assert doc["best"]["point"]["VARIANT"] == 0 and doc["retimed"]
    assert len(doc["top"]) == 2 and all(len(c["rounds"]) == 3 for c in doc["top"])
    code, again, err = tune(spec, "--strategy", "brute", "--top-k", "2")
    assert code == 0 and again["measured"] == 0 and not again["retimed"], err
