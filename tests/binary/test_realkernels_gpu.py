"""C++ kernels on a real GPU (`gpu` marker: skipped cleanly without one): a
template instance compiled by NVRTC from its name, a CCCL (cub) kernel, an
nvcc-built whole file, and the third-party kernels of configs/realkernels when
kernels/thirdparty/fetch.sh has fetched them. Each launches and passes its check."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.repo import REPO

pytestmark = pytest.mark.gpu

CXX = REPO / "configs" / "cxx"
REAL = REPO / "configs" / "realkernels"
FAST = ["--warmup", "2", "--rep", "10"]


def launch(spec: Path, *extra) -> list[dict]:
    """The JSON record of every point of the spec's sweep (one for a plain spec)."""
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--json", str(spec),
                           *FAST, *extra], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    document = json.loads(proc.stdout)
    return document["results"] if "results" in document else [document]


def passed(record: dict) -> bool:
    return record["check"]["passed"] is True


def test_a_template_instance_named_with_a_var_runs_and_passes_at_every_point():
    records = launch(CXX / "reduce6.yaml")
    assert len(records) == 3 and all(map(passed, records))


def test_a_cub_kernel_from_the_cccl_wheel_runs_and_passes():
    (record,) = launch(CXX / "block_sum_cub.yaml")
    assert passed(record)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_an_nvcc_built_whole_file_runs_and_passes():
    records = launch(CXX / "whole_file_nvcc.yaml")
    assert len(records) == 2 and all(map(passed, records))


@pytest.mark.parametrize("name", ["axpy_overload.yaml", "axpy_fp64.yaml", "scale_plain.yaml"])
def test_overloads_and_plain_cxx_names_run_and_pass(name):
    (record,) = launch(CXX / name)
    assert passed(record)


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.yaml")))
def test_third_party_kernels_run_and_pass_their_checks(name):
    from cubinrun.specfile.yamlload import load_yaml_file
    tree = load_yaml_file(REAL / name)
    if not (REAL / tree["kernel"]["source"]).is_file():
        pytest.skip("third-party kernels not fetched: kernels/thirdparty/fetch.sh")
    records = launch(REAL / name)
    assert records and all(r.get("check") is None or r["check"]["passed"] in (True, None)
                           for r in records)
