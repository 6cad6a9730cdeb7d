"""What a new user met with `init` and `props` (issue 46): a template
kernel's parameters keep the source's names, the suggested check names an
output (a pointer C++ declares non-const), `init` and `compile` of a source
with no kernel say one thing with one exit code (3, SPEC: a build that made
nothing to run), and `props --json` without a GPU prints its JSON error
document as `launch --json` does, with the same exit code."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.repo import PACKAGE_PARENT, REPO
from support.cli import run

REDUCE6 = REPO / "kernels" / "cxx" / "reduce6.cu"
VECTOR_ADD = REPO / "kernels" / "vector_add.cu"
CUBIN = REPO / "kernels" / "build" / "vector_add.sm_90.cubin"


@pytest.fixture(autouse=True)
def nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc", reason="init of a .cu compiles it with NVRTC")


def signature(text: str) -> list[str]:
    block = text.split("signature:\n")[1].split("vars:")[0]
    return [line.split(":")[0].strip() for line in block.splitlines()]


def suggested_check(text: str) -> str:
    return text.split("# check:")[1].splitlines()[1].strip("# ").split(":")[0]


def test_a_template_kernel_keeps_the_names_its_source_gives(capsys):
    code, text, err = run(capsys, "init", REDUCE6, "--kernel", "reduce6<float, 256, true>",
                          "--arch", "sm_90")
    assert code == 0, err
    assert signature(text) == ["in", "out", "n"]
    assert "in: {shape: [N]" in text and "p0" not in text


@pytest.mark.parametrize("source, kernel", [(VECTOR_ADD, None),
                                            (REDUCE6, "reduce6<float, 256, true>")])
def test_the_suggested_check_is_an_output_not_the_const_input(capsys, source, kernel):
    code, text, err = run(capsys, "init", source, "--arch", "sm_90",
                          *(["--kernel", kernel] if kernel else []))
    assert code == 0, err
    assert suggested_check(text) == "out"
    assert "C++ declares it non-const" in text


def test_without_types_the_suggested_check_is_the_last_pointer_marked_a_guess(capsys):
    code, text, err = run(capsys, "init", CUBIN)
    assert code == 0, err
    assert suggested_check(text) == "p2" and "guess: the last pointer" in text


def test_init_and_compile_of_a_source_without_a_kernel_agree(capsys, tmp_path):
    empty = tmp_path / "empty.cu"
    empty.write_text("// nothing here yet\n")
    said = {}
    for command in (["init", empty], ["compile", empty, "-o", tmp_path / "e.cubin"]):
        code, _, err = run(capsys, *command, "--arch", "sm_90")
        said[command[0]] = (code, err.strip())
    assert said["init"] == said["compile"] == (3, f"error: {empty} compiled to no kernel")
    assert not (tmp_path / "e.cubin").exists()


def test_init_of_templates_nobody_named_says_how_with_its_own_flag(capsys, tmp_path):
    source = tmp_path / "t.cu"
    source.write_text("template <int B> __global__ void k(float* o) { o[0] = B; }\n")
    code, _, err = run(capsys, "init", source, "--arch", "sm_90")
    assert code == 3 and "e.g. --kernel 'k<ARGS>'" in err


def cubinrun(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT), "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=env)


def test_props_json_without_a_gpu_prints_its_error_document_as_launch_does():
    """No device is visible (CUDA_VISIBLE_DEVICES=""), with a driver or without."""
    props = cubinrun("props", "--json")
    launch = cubinrun("launch", "--json", REPO / "configs" / "vector_add.yaml")
    assert props.returncode == launch.returncode == 4, (props.stderr, launch.stderr)
    document = json.loads(props.stdout)
    assert document["devices"] == [] and document["exit_code"] == 4
    assert document["error"]["type"] == json.loads(launch.stdout)["error"]["type"] == "cuda"
    assert document["error"]["message"] in props.stderr
    assert len(props.stderr.strip().splitlines()) == 1 and "Traceback" not in props.stderr
