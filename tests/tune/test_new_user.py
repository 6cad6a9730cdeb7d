"""What a new user met with `cubinrun tune` on the CPU, as real processes:
the replay of a `launch --dry-run` file says it holds no timings (exit 2,
not the check-failure code), a landscape holding a median of 0 us replays
(it divided by zero), `tune --dry-run` exits 2 for a point that is a spec
error as `launch --dry-run` does, and `tune -o` into another folder writes
a spec whose paths still name the spec's files."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.repo import CUBINS, PACKAGE_PARENT

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")

CUBIN = CUBINS / "vector_add.sm_90.cubin"
BLOCKS = [256, 512, 1024]


def cubinrun(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.fixture
def project(tmp_path):
    """proj/add.yaml, a vector add swept over BLOCK, naming files beside it:
    its cubin, an input .npy, a reference function."""
    folder = tmp_path / "proj"
    (folder / "kernels").mkdir(parents=True)
    (folder / "data").mkdir()
    shutil.copy(CUBIN, folder / "kernels" / "add.cubin")
    np.save(folder / "data" / "x.npy", np.arange(4096, dtype=np.float32))
    (folder / "refs.py").write_text("def add(inputs, vars):\n"
                                    "    return inputs['x'] + inputs['y']\n")
    (folder / "add.yaml").write_text(
        "# x + y, swept over BLOCK\n"
        "kernel:\n  cubin: kernels/add.cubin    # built from kernels/vector_add.cu\n"
        "  name: add_kernel\n"
        "signature: {x: \"*fp32\", y: \"*fp32\", out: \"*fp32\", n: i32}\n"
        "vars:\n  N: 4096\n  BLOCK: 256\n"
        "args:\n"
        "  x: {shape: [N], init: {file: data/x.npy}}\n"
        "  y: {shape: [N], init: ones}\n"
        "  out: {shape: [N], init: zeros, save: 'data/out.npy'}\n"
        "  n: N\n"
        "grid: [cdiv(N, BLOCK)]\n"
        "check:\n  out: {reference: refs.py:add}\n"
        f"sweep:\n  BLOCK: {BLOCKS}\n")
    return folder / "add.yaml"


def landscape(spec: Path, medians: dict[int, float]) -> Path:
    """The `launch --jsonl` results of a sweep of `spec` that ran (made up)."""
    path = spec.parent / "landscape.jsonl"
    path.write_text("".join(json.dumps({
        "spec": str(spec), "point": {"BLOCK": block}, "kernel": "add_kernel", "exit_code": 0,
        "status": "ok", "device": {"name": "Fake H200"}, "timing": {"median_us": median},
        "check": {"passed": True}, "wall_s": 0.01}) + "\n" for block, median in medians.items()))
    return path


def test_the_replay_of_a_dry_run_file_says_it_holds_no_timings(project):
    dry = project.parent / "dry.jsonl"
    done = cubinrun("launch", "--dry-run", project, "--jsonl", dry, cwd=project.parent)
    assert done.returncode == 0, done.stderr
    done = cubinrun("tune", project, "--replay", dry, cwd=project.parent)
    line = one_line(done)
    assert done.returncode == 2 and str(dry) in line and "--dry-run" in line
    assert "no timing" in line


@pytest.mark.parametrize("strategy", ["brute", "bo-local"])
def test_a_landscape_with_a_median_of_zero_replays(project, strategy):
    replay = landscape(project, {256: 0.0, 512: 3.0, 1024: 4.0})
    done = cubinrun("tune", project, "--replay", replay, "--strategy", strategy, "--json",
                    cwd=project.parent)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["best"]["point"] == {"BLOCK": 256} and document["best"]["value"] == 0.0
    assert document["span"] is None and document["gap"] == 1.0
    done = cubinrun("tune", project, "--replay", replay, "--strategy", strategy,
                    cwd=project.parent)
    assert done.returncode == 0 and "span -" in done.stdout, done.stderr


def test_a_point_that_is_a_spec_error_fails_the_dry_run_as_launch_does(project):
    broken = project.parent / "broken.yaml"
    broken.write_text(project.read_text().replace("cdiv(N, BLOCK)", "cdiv(N, BLOCK - 256)"))
    launched = cubinrun("launch", "--dry-run", broken, cwd=project.parent)
    tuned = cubinrun("tune", broken, "--dry-run", "--arch", "sm_90", cwd=project.parent)
    assert launched.returncode == tuned.returncode == 2, (launched.stderr, tuned.stderr)
    assert "spec error: BLOCK=256" in tuned.stdout and "division by zero" in tuned.stdout
    assert cubinrun("tune", project, "--dry-run", "--arch", "sm_90",
                    cwd=project.parent).returncode == 0


def test_the_pinned_spec_in_another_folder_names_the_same_files(project, tmp_path):
    replay = landscape(project, {256: 5.0, 512: 3.0, 1024: 4.0})
    best = tmp_path / "out" / "best.yaml"
    best.parent.mkdir()
    done = cubinrun("tune", project, "--replay", replay, "-o", best, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = best.read_text()
    assert "cubin: ../proj/kernels/add.cubin    # built from" in text       # comments kept
    assert "{file: ../proj/data/x.npy}" in text and "save: \"../proj/data/out.npy\"" in text
    assert "BLOCK: 512" in text and "sweep" not in text
    # the reference cannot move (it must lie below its spec): said, and left as written
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: -o")]
    assert len(notes) == 1 and "check.out.reference: refs.py:add" in notes[0]
    shutil.copy(project.parent / "refs.py", best.parent)
    done = cubinrun("launch", "--dry-run", best, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert Path(plan["kernel_file"]).resolve() == (project.parent / "kernels" / "add.cubin")
    assert plan["grid"] == [4096 // 512, 1, 1]
    # beside the spec nothing moves
    beside = project.parent / "best.yaml"
    done = cubinrun("tune", project, "--replay", replay, "-o", beside, cwd=tmp_path)
    assert done.returncode == 0 and "note:" not in done.stderr
    assert "cubin: kernels/add.cubin" in beside.read_text()


def test_paths_in_flow_lists_and_templates_move_with_their_comments(tmp_path):
    from cubinrun.tune.output import relocated
    spec = tmp_path / "proj" / "mm.yaml"
    text = ("# tuned\nkernel:\n  source: mm_{TILE}.cu   # one file per tile\n"
            "  include: [inc, 'third/inc']\n  name: mm\n"
            "args:\n  a: {shape: [4], init: {file: \"a_{TILE}.npy\"}, save: a.out.npy}\n"
            "  b:\n    shape: [4]\n    init: {file: /data/b.npy}\n")
    moved, notes = relocated(text, str(spec), str(tmp_path / "out" / "best.yaml"))
    assert notes == [] and moved == text.replace("mm_{", "../proj/mm_{").replace(
        "[inc, 'third/inc']", '[../proj/inc, "../proj/third/inc"]').replace(
        '"a_{', '"../proj/a_{').replace("save: a.out", "save: ../proj/a.out")
