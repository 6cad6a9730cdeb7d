"""`cubinrun capture` on a real GPU (`gpu` marker: skipped cleanly without one):
a torch.compile program (with and without Inductor's static launcher), an eager
PyTorch program and an nvcc-built CUDA program are captured, their output must
be what it is without capture, and `cubinrun launch DIR` must pass at least 95%
of what was captured. Each record kind has its program: cuBLASLt GEMMs whose
parameters come through `extra`, graphs replayed by hand and by
torch.compile(mode="reduce-overhead"), a CuPy program, cudaLaunchKernelEx with
clusters and a captured graph, module globals, and a pointer array (listed as
left out with its reason)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.repo import REPO

pytestmark = pytest.mark.gpu

PROGRAMS = REPO / "tests" / "capture_programs"


def run(command, env=None, timeout=900):
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def capture_and_launch(tmp_path: Path, command: list[str], env=None) -> dict:
    plain = run(command, env)
    assert plain.returncode == 0, plain.stderr
    folder = tmp_path / "captured"
    captured = run([sys.executable, "-m", "cubinrun", "capture", "-o", str(folder), "--",
                    *command], env)
    assert captured.returncode == 0, captured.stderr
    assert captured.stdout == plain.stdout            # the program's own output, unchanged
    summary = json.loads((folder / "capture.json").read_text())
    assert summary["captured"] > 0, summary
    launched = run([sys.executable, "-m", "cubinrun", "launch", "--json", "--no-bench",
                    str(folder)])
    assert launched.returncode in (0, 1), launched.stderr
    document = json.loads(launched.stdout)
    results = document.get("results") or [{**document, "exit_code": launched.returncode}]
    passing = [r for r in results if r.get("exit_code", 0) == 0]
    assert len(results) == summary["captured"]
    assert summary["replayed_passing"] == len(passing)      # --verify said the same
    assert len(passing) >= 0.95 * len(results), [
        (r.get("spec"), r.get("error") or r.get("check")) for r in results if r not in passing]
    return summary


def test_a_torch_compile_program(tmp_path):
    pytest.importorskip("triton")
    summary = capture_and_launch(tmp_path, [sys.executable, str(PROGRAMS / "compiled.py")])
    assert any(s["source"] == "cupti" for s in summary["specs"])      # the static launcher's


def test_a_torch_compile_program_through_triton_s_launcher(tmp_path):
    pytest.importorskip("triton")
    summary = capture_and_launch(tmp_path, [sys.executable, str(PROGRAMS / "compiled.py")],
                                 {"STATIC_LAUNCHER": "0"})
    assert any(s["source"] == "triton" for s in summary["specs"])


def test_an_eager_pytorch_program(tmp_path):
    pytest.importorskip("torch")
    summary = capture_and_launch(tmp_path, [sys.executable, str(PROGRAMS / "eager.py")])
    assert len(summary["specs"]) >= 5


def built(tmp_path: Path, source: str) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    app = tmp_path / Path(source).stem
    subprocess.run([nvcc, "-O2", "-arch=native", "-o", str(app), str(PROGRAMS / source)],
                   check=True)
    return app


def spec_of(tmp_path: Path, summary: dict, kernel_part: str) -> dict:
    import yaml
    entry = next(s for s in summary["specs"] if kernel_part in s["kernel"])
    return yaml.safe_load((tmp_path / "captured" / entry["spec"]).read_text())


def no_module_left_out(summary: dict) -> bool:
    return not [s for s in summary["skipped"] if "defines this kernel" in s["reason"]]


def test_an_nvcc_built_cuda_program(tmp_path):
    summary = capture_and_launch(tmp_path, [str(built(tmp_path, "app.cu"))])
    kernels = {s["kernel"] for s in summary["specs"]}
    assert len(kernels) == 3, kernels                 # saxpy once, though launched 3 times


def test_library_calls_gemms_through_extra_and_a_graph_replayed_by_hand(tmp_path):
    pytest.importorskip("torch")
    summary = capture_and_launch(tmp_path, [sys.executable, str(PROGRAMS / "libraries.py")])
    assert any(s["extra"] for s in summary["specs"]), summary["skipped"]     # cuBLASLt's nvjet
    assert any(s["graph"] for s in summary["specs"]), summary["skipped"]
    assert not [s for s in summary["skipped"] if "`extra`" in s["reason"]]
    assert no_module_left_out(summary), summary["skipped"]


def test_reduce_overhead_graph_nodes(tmp_path):
    pytest.importorskip("triton")
    summary = capture_and_launch(tmp_path, [sys.executable, str(PROGRAMS / "reduce_overhead.py")])
    assert any(s["graph"] for s in summary["specs"]), summary["skipped"]
    assert not [s for s in summary["skipped"] if "graph with" in s["reason"]], summary["skipped"]


def test_triton_tuples_and_tensor_descriptors(tmp_path):
    pytest.importorskip("triton")
    import torch
    summary = capture_and_launch(tmp_path, [sys.executable, str(PROGRAMS / "triton_args.py")])
    pair = spec_of(tmp_path, summary, "scale_pair")
    assert isinstance(pair["args"]["ptrs"], list) and len(pair["args"]["ptrs"]) == 2
    if torch.cuda.get_device_capability()[0] >= 9:
        copy = spec_of(tmp_path, summary, "tma_copy")
        assert copy["args"]["in_desc"]["buffer"]["shape"] == [256, 128]


def test_a_cupy_program(tmp_path):
    pytest.importorskip("cupy")
    summary = capture_and_launch(tmp_path, [sys.executable, str(PROGRAMS / "cupy_program.py")])
    assert {"scale_add", "squared_diff"} <= {s["kernel"] for s in summary["specs"]}


def test_launch_kernel_ex_with_clusters_and_a_captured_graph(tmp_path):
    summary = capture_and_launch(tmp_path, [str(built(tmp_path, "launch_ex.cu"))])
    assert spec_of(tmp_path, summary, "clustered_scale")["launch"]["cluster"] == [2, 1, 1]
    graph_nodes = [s["kernel"] for s in summary["specs"] if s["graph"]]
    assert any("shift" in k for k in graph_nodes), summary["specs"]


def test_module_globals_and_a_pointer_array(tmp_path):
    summary = capture_and_launch(tmp_path, [str(built(tmp_path, "tables.cu"))])
    weighted = spec_of(tmp_path, summary, "weighted")
    assert {"weights", "calls"} <= set(weighted["globals"]) and "calls" in weighted["check"]
    pointer_arrays = [s for s in summary["skipped"] if "pointer(s) into other" in s["reason"]]
    assert [s["kernel"] for s in pointer_arrays if "sum_rows" in s["kernel"]], summary["skipped"]
