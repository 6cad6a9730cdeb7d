"""`cubinrun capture` on a real GPU (`gpu` marker: skipped cleanly without one):
a torch.compile program (with and without Inductor's static launcher), an eager
PyTorch program and an nvcc-built CUDA program are captured, their output must
be what it is without capture, and `cubinrun launch DIR` must pass at least 95%
of what was captured."""
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


def test_an_nvcc_built_cuda_program(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    app = tmp_path / "app"
    subprocess.run([nvcc, "-O2", "-arch=native", "-o", str(app), str(PROGRAMS / "app.cu")],
                   check=True)
    summary = capture_and_launch(tmp_path, [str(app)])
    kernels = {s["kernel"] for s in summary["specs"]}
    assert len(kernels) == 3, kernels                 # saxpy once, though launched 3 times
