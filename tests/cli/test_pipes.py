"""A closed stdout never changes the exit code (SPEC section 3), a full one
fails the command: real pipes, real child processes, as a CI script would
run cubinrun."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.platforms import skip_on_windows
from support.repo import REPO

VECTOR_ADD = REPO / "configs" / "vector_add.yaml"


def closed_early(*args: str) -> subprocess.CompletedProcess:
    """Run cubinrun with its stdout a pipe whose reader has already left: every
    write it makes meets EPIPE, at whatever point of the command it comes."""
    process = subprocess.Popen([sys.executable, "-m", "cubinrun", *map(str, args)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    process.stdout.close()
    err = process.stderr.read().decode()
    return subprocess.CompletedProcess(args, process.wait(timeout=120), "", err)


def into_full(*args: str) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120)


def timed(median: float, spec: str = "configs/va.yaml") -> dict:
    timing = {"median_us": median, "std_us": 0.001 * median, "samples": 1000}
    return {"spec": spec, "kernel": "k", "point": {}, "exit_code": 0,
            "device": {"name": "NVIDIA H200"}, "timing": timing}


@pytest.fixture
def regression(tmp_path) -> tuple[Path, Path]:
    """A baseline and new results where the new run is 50% slower (exit 5)."""
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    base.write_text("\n".join(json.dumps(timed(10.0, f"s{i}.yaml")) for i in range(300)) + "\n")
    new.write_text("\n".join(json.dumps(timed(15.0, f"s{i}.yaml")) for i in range(300)) + "\n")
    return base, new


@pytest.fixture
def bad_spec(tmp_path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text("kernel: {cubin: nothing.cubin}\n")
    return path


def test_a_closed_pipe_keeps_each_commands_own_code(regression, bad_spec):
    skip_on_windows("a pipe whose reader has left")
    cases = [
        (("schema",), 0),
        (("launch", "--dry-run", "--json", VECTOR_ADD), 0),
        (("launch", "--dry-run", "--json", VECTOR_ADD, bad_spec), 2),
        (("compare", *regression), 5),
        (("compare", "--json", *regression), 5),
    ]
    for args, code in cases:
        done = closed_early(*args)
        assert done.returncode == code, (args, done.stderr)
        assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_head_in_a_shell_pipeline_keeps_the_code(regression):
    skip_on_windows("a bash pipeline")
    base, new = regression
    for _ in range(3):          # the race between head leaving and cubinrun writing
        shell = subprocess.run(
            f"{sys.executable} -m cubinrun compare {base} {new} | head -1 > /dev/null; "
            "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True,
            text=True, timeout=120, cwd=REPO)
        assert shell.stdout.strip() == "5" and shell.stderr == "", shell


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_stdout_is_one_line_and_exit_2(regression):
    """Lost output is not success, nor a mere regression."""
    for args, code in ((("schema",), 2), (("compare", *regression), 2)):
        done = into_full(*args)
        assert done.returncode == code, (args, done.stderr)
        assert done.stderr.splitlines() == [
            "error: cannot write to stdout: No space left on device; the output is lost"]


@pytest.mark.gpu
def test_a_real_sweep_into_a_closed_pipe_keeps_its_code_and_files(tmp_path):
    """On the GPU: a 3-point sweep whose --jsonl - reader has left still runs every
    point, exits 0, writes its JUnit file, and --strict compare of it with itself
    (written afresh twice, never appended) is 0."""
    skip_on_windows("a pipe whose reader has left")
    junit, saved = tmp_path / "j.xml", tmp_path / "r.jsonl"
    sweep = ("launch", VECTOR_ADD, "--axis", "N=[1024,4096,65536]", "--warmup", "2",
             "--rep", "10")
    done = closed_early(*sweep, "--jsonl", "-", "--junit", junit)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert junit.read_text().count("<testcase ") == 3 and "<failure" not in junit.read_text()
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "cubinrun", *sweep, "--samples",
                               "--jsonl", saved], capture_output=True, text=True, cwd=REPO,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    assert len(saved.read_text().splitlines()) == 3
    done = subprocess.run([sys.executable, "-m", "cubinrun", "compare", "--strict", saved, saved],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0 and "MISSING" not in done.stdout, done.stdout + done.stderr
