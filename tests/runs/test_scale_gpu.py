"""Scale-out on real GPUs (`gpu` marker): `--devices` and `--ray` give the
check results of a plain run on a 14-point sweep, with every result tagged
by its card; two workers can share one GPU. On a one-GPU machine `all` is
that GPU; on several, the runs spread over them."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.repo import REPO

pytestmark = pytest.mark.gpu

CONFIGS = REPO / "configs"
SWEEP = (CONFIGS / "vector_add.yaml", "--axis", "N[pow2]=[10:23]", "--warmup", "2",
         "--rep", "10")                                      # 14 points


def launch(*args, expect: int = 0):
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--json",
                           *map(str, args)], capture_output=True, text=True, cwd=REPO,
                          timeout=600)
    assert proc.returncode == expect, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)["results"], proc.stderr


def checks(results):
    return [(r["point"], r["exit_code"], r["check"]["passed"]) for r in results]


@pytest.fixture(scope="module")
def plain():
    results, _ = launch(*SWEEP)
    assert len(results) == 14 and all(r["check"]["passed"] for r in results)
    return results


def test_devices_all_gives_the_check_results_of_a_plain_run(plain):
    results, _ = launch(*SWEEP, "--devices", "all")
    assert checks(results) == checks(plain)
    for r in results:
        device = r["device"]
        assert device["uuid"].startswith("GPU-") and device["host"]
        assert device["name"] == plain[0]["device"]["name"]
        assert r["timing"]["samples"] >= 10


def test_two_workers_share_one_gpu(plain):
    results, err = launch(*SWEEP, "--devices", "0,0")
    assert checks(results) == checks(plain)
    assert {r["device"]["shared_by"] for r in results} == {2}
    assert len({r["device"]["uuid"] for r in results}) == 1
    assert "note: several workers share GPU 0" in err


def test_a_kernel_fault_on_a_device_worker_ends_only_its_run():
    results, _ = launch(CONFIGS / "vector_add.yaml", CONFIGS / "fault.yaml",
                        CONFIGS / "vector_add.yaml", "--no-bench", "--devices", "all",
                        expect=4)
    assert [r["exit_code"] for r in results] == [0, 4, 0]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in results[1]["error"]["message"]


def test_ray_on_a_local_cluster_gives_the_check_results_of_a_plain_run(plain):
    pytest.importorskip("ray")
    results, _ = launch(*SWEEP, "--ray")
    assert checks(results) == checks(plain)
    assert all(r["device"]["uuid"].startswith("GPU-") for r in results)
    shared, err = launch(*SWEEP, "--ray", "--workers-per-gpu", "2")
    assert checks(shared) == checks(plain)
    assert {r["device"]["shared_by"] for r in shared} == {2}
