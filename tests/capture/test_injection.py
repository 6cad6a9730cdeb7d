"""cubinrun capture's CUPTI injection library on the CPU: a harness
(tests/fakecuda/capture_harness.c) loads it against a fake libcuda and libcupti
(tests/fakecuda/fake_cupti.c), calls InitializeInjection as the driver does and
plays CUPTI's callbacks around module loads and launches of the sample
kernels; the records it leaves become specs that dry-run against the real
cubins."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml

from support.repo import REPO
from support.cli import run

from cubinrun.capture.selection import Selection
from cubinrun.capture.session import write_folder
from cubinrun.capture.summary import Summary
from cubinrun.errors import BuildError

pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="CUDA_INJECTION64_PATH is Linux's")
FAKES = REPO / "tests" / "fakecuda"
BUILD = REPO / "kernels" / "build"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from cubinrun.capture.injection_build import build_injection, header_dirs
    from cubinrun.launcher.compilers import find_compiler
    try:
        includes = header_dirs()
        injection = build_injection()
    except BuildError as exc:
        pytest.skip(f"no CUPTI headers or C compiler here: {exc}")
    folder = tmp_path_factory.mktemp("fakecupti")
    compiler = find_compiler()
    flags = [f"-I{d}" for d in includes]
    fake = folder / "libcuda.so.1"
    for command in (
            compiler.shared_library(str(FAKES / "fake_cupti.c"), str(fake), includes,
                                    str(folder), link_python=False)
            + ["-Wl,-soname,libcuda.so.1"],
            compiler.executable([str(FAKES / "capture_harness.c")], str(folder / "harness"),
                                flags) + ["-ldl"]):
        subprocess.run(command, check=True, capture_output=True)
    return injection, folder


def test_the_injection_library_records_launches_that_become_specs(built, tmp_path, capsys):
    injection, fakes = built
    (tmp_path / "raw").mkdir()
    env = {"LD_LIBRARY_PATH": str(fakes), "CUBINRUN_CAPTURE_DIR": str(tmp_path),
           "CUBINRUN_CAPTURE_CUPTI": str(fakes / "libcuda.so.1"), "CUBINRUN_CAPTURE_DEBUG": "1"}
    harness = subprocess.run([str(fakes / "harness"), str(injection),
                              str(BUILD / "vector_add.sm_90.cubin"),
                              str(BUILD / "structs.sm_90.cubin")],
                             env=env, capture_output=True, text=True, timeout=60)
    assert harness.returncode == 0, harness.stderr
    # the program's own results: each first launch's, not the second's
    assert harness.stdout == "out[5] 10.5 both[1029] 19.0 sums[0] 4321.0\n"
    assert harness.stderr == ""
    summary = Summary(["harness"])
    write_folder(tmp_path, summary, Selection(), lambda line: None)
    document = json.loads((tmp_path / "capture.json").read_text())
    assert document["launches_seen"] == 5 and document["captured"] == 3
    assert document["skipped"] == [{"kernel": "add_kernel", "count": 2, "reason":
                                    "a launch of the same kernel, grid and sizes was already seen"}]
    first, noisy, saxpy = document["specs"]
    assert first["checks"] == ["a2"] and first["deterministic"] is True
    assert noisy["deterministic"] is False and noisy["not_checked"] == ["a2"]
    spec = yaml.safe_load((tmp_path / saxpy["spec"]).read_text())
    assert spec["signature"]["a0"] == "struct[u64, *u8, *u8]"
    assert spec["args"]["a0"][2] == {"into": "a0[1]", "at": 4096}
    assert spec["args"]["a4"] == {"into": "a3", "at": 8}
    expected = np.load(tmp_path / spec["check"]["a0[1]"]["file"]).view(np.float32)
    x = np.arange(1024) % 10
    assert np.array_equal(expected[1024:], 2 * x + (np.arange(1024, 2048) % 10))
    add = yaml.safe_load((tmp_path / first["spec"]).read_text())
    assert add["signature"] == {"a0": "*u8", "a1": "*u8", "a2": "*u8", "a3": "u32"}
    assert add["kernel"]["name"] == "add_kernel" and add["args"]["a3"] == 4096
    assert (tmp_path / "logs").is_dir()
    code, out, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(tmp_path))
    assert code == 0, err
