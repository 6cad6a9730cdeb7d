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


def test_extra_buffers_module_globals_and_graph_nodes_become_specs(built, tmp_path, capsys):
    injection, fakes = built
    (tmp_path / "raw").mkdir()
    env = {"LD_LIBRARY_PATH": str(fakes), "CUBINRUN_CAPTURE_DIR": str(tmp_path),
           "CUBINRUN_CAPTURE_CUPTI": str(fakes / "libcuda.so.1")}
    harness = subprocess.run([str(fakes / "harness"), str(injection),
                              str(BUILD / "vector_add.sm_90.cubin"),
                              str(BUILD / "structs.sm_90.cubin"),
                              str(BUILD / "conv1d_constant.sm_90.cubin"),
                              str(REPO / "tests" / "fixtures" / "cubins" /
                                  "cluster.compressed.fatbin")],
                             env=env, capture_output=True, text=True, timeout=60)
    assert harness.returncode == 0, harness.stderr
    assert harness.stderr == ""
    # the program's own results: conv1d counted once, each graph ran twice, not three times
    x, acc0, mid = 5.0, 1.0, 4 + 0.5
    # (the hand-built graph ran twice, then once more as another executable graph)
    assert harness.stdout == (f"out[5] {x + 2:.1f} smooth[2] {2 + 10 * 3 + 100 * 4:.1f} calls 42 "
                              f"gout[3] {103 + 1:.1f} acc[4] {acc0 + 3 * 3 * mid:.1f} "
                              "gathered[7] 1007.0 cacc[3] 8.0 known graph 1 run(s)\n")
    raw = json.loads(next(tmp_path.glob("raw/cupti-*/00007/record.json")).read_text())
    assert raw["kernel"] == "gather_rows" and len(raw["loaded"]) == 2
    assert [loaded["offset"] for loaded in raw["loaded"]] == [0, 8]
    targets = [raw["regions"][loaded["target"]] for loaded in raw["loaded"]]
    assert [t["size"] for t in targets] == [256, 256] and all(t["global"] is None for t in targets)
    summary = Summary(["harness"])
    write_folder(tmp_path, summary, Selection(), lambda line: None)
    document = json.loads((tmp_path / "capture.json").read_text())
    specs = {s["spec"].split("-", 1)[1]: s for s in document["specs"]}
    names = [s["spec"] for s in document["specs"]]
    assert len(names) == 9, (names, document["skipped"])
    assert [s["kernel"] for s in document["specs"]] == [
        "add_kernel", "conv1d", "add_kernel", "add_kernel", "struct_saxpy", "add_kernel",
        "struct_saxpy", "fixed_block", "add_kernel"]     # the last over a stale address
    loaded = {s["spec"]: yaml.safe_load((tmp_path / s["spec"]).read_text())
              for s in document["specs"]}
    (through_extra, conv, captured_node, first_node, second_node, in_child, after_child,
     from_library, over_stale) = loaded.values()
    assert over_stale["grid"] == [64, 1, 1]
    # a child graph's node ran in its place: the node after it read its results
    assert in_child["grid"] == [32, 1, 1] and document["specs"][5]["graph"]
    read = np.load(tmp_path / after_child["args"]["a0"][1]["init"]["file"]).view(np.float32)
    assert read[3] == 7.0
    # ... and the graph's memset node had set what it accumulates into before it ran
    filled = np.load(tmp_path / after_child["args"]["a0"][2]["init"]["file"]).view(np.float32)
    assert (filled == 1.0).all()
    # a library's kernel: its binary unpacked from the library's compressed fatbin
    from cubinrun.binary.cubin import read_cubin
    cubin = read_cubin((tmp_path / from_library["kernel"]["cubin"]).read_bytes())
    assert cubin.arch == "sm_90" and "fixed_block" in [k.name for k in cubin.kernels]
    # `extra`: the buffer split into the kernel's four parameters, pointers relocated
    assert through_extra["signature"] == {"a0": "*u8", "a1": "*u8", "a2": "*u8", "a3": "u32"}
    assert through_extra["args"]["a3"] == 1024 and "init" in through_extra["args"]["a0"]
    assert "came through `extra`" in (tmp_path / names[0]).read_text()
    # globals: saved as the launch found them, and the counter's change checked
    assert set(conv["globals"]) == {"d_filter", "d_calls"}
    filter_ = np.load(tmp_path / conv["globals"]["d_filter"]["init"]["file"]).view(np.float32)
    assert list(filter_[:3]) == [1, 10, 100]
    assert np.load(tmp_path / conv["globals"]["d_calls"]["init"]["file"]).view(np.uint32)[0] == 41
    assert np.load(tmp_path / conv["check"]["d_calls"]["file"]).view(np.uint32)[0] == 42
    # the captured graph's node: its inputs as written after the capture
    inputs = np.load(tmp_path / captured_node["args"]["a0"]["init"]["file"]).view(np.float32)
    assert inputs[3] == 103.0 and captured_node["grid"] == [8, 1, 1]
    assert "A kernel node of a CUDA graph" in (tmp_path / names[2]).read_text()
    # the second node of the built graph reads what the first wrote at this run
    read = np.load(tmp_path / second_node["args"]["a0"][1]["init"]["file"]).view(np.float32)
    assert read[4] == mid and first_node["grid"] == [16, 1, 1]
    assert second_node["launch"] == {"cooperative": True} and "launch" not in first_node
    accumulated = np.load(tmp_path / second_node["check"]["a0[2]"]["file"]).view(np.float32)
    assert accumulated[4] == acc0 + 3 * mid
    skipped = {s["reason"]: s for s in document["skipped"]}
    assert any("being captured" in reason for reason in skipped)
    changed = [s for s in document["skipped"] if "were set after instantiation" in s["reason"]]
    assert sorted(s["kernel"] for s in changed) == ["add_kernel", "struct_saxpy"]
    assert skipped["its memory holds 2 pointer(s) into other allocations (a pointer array the "
                   "kernel may load): a spec cannot relocate pointers inside a buffer yet"
                   ]["kernel"] == "gather_rows"
    code, out, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(tmp_path))
    assert code == 0, err
