"""Result files hold whole lines and one command's output, and output that
cannot be written is an error: real processes writing one file at once, a
file size limit that makes a write fail part-way, folders that do not exist."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.platforms import skip_on_windows
from support.repo import REPO

VECTOR_ADD = REPO / "configs" / "vector_add.yaml"
POINTS = 1000


def sweep(points: int = POINTS) -> tuple[str, ...]:
    return ("launch", "--dry-run", str(VECTOR_ADD), "--axis", f"N=[1:{points}:1]")


def cubinrun(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            **popen)


def whole_lines(path: Path) -> list[dict]:
    """Every line of `path` as JSON (a torn line fails here)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_commands_writing_one_jsonl_at_once_never_tear_it(tmp_path):
    """Four sweeps started at once: those that find the file locked are refused
    naming a process that was writing it; the file holds one command's whole
    lines."""
    skip_on_windows("advisory locks name their holder on POSIX only")
    shared = tmp_path / "same.jsonl"
    processes = [cubinrun(*sweep(), "--jsonl", shared) for _ in range(4)]
    ended = [(p.pid, p.wait(timeout=300), p.stderr.read()) for p in processes]
    refused = [err for _, code, err in ended if code == 2]
    assert all(code in (0, 2) for _, code, _ in ended), ended
    assert refused and len(refused) < len(ended), ended
    pids = {str(pid) for pid, _, _ in ended}
    for err in refused:
        found = re.fullmatch(rf"error: cannot write --jsonl {re.escape(str(shared))}: process "
                             r"(\d+) is writing it \(give each command its own file, or "
                             r"--append to collect one\)", err.strip())
        assert found and found.group(1) in pids, err
    lines = whole_lines(shared)
    assert [line["point"]["N"] for line in lines] == list(range(1, POINTS + 1))


def test_commands_appending_at_once_add_whole_lines(tmp_path):
    shared = tmp_path / "all.jsonl"
    processes = [cubinrun(*sweep(), "--jsonl", shared, "--append") for _ in range(3)]
    assert [p.wait(timeout=300) for p in processes] == [0, 0, 0]
    points = sorted(line["point"]["N"] for line in whole_lines(shared))
    assert points == sorted(list(range(1, POINTS + 1)) * 3)


def _file_size_limit(limit: int):
    """A child whose files may not grow past `limit` bytes: a write beyond it
    fails with EFBIG (Python ignores SIGXFSZ), as a full disk fails one."""
    import resource

    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("flag, name", [("--jsonl", "r.jsonl"), ("--csv", "r.csv"),
                                        ("--junit", "r.xml"), ("--markdown", "r.md")])
def test_a_result_file_that_cannot_be_written_is_exit_2_naming_it(tmp_path, flag, name):
    skip_on_windows("a file size limit (RLIMIT_FSIZE) is POSIX")
    path = tmp_path / name
    assert cubinrun(*sweep(1)).wait(timeout=300) == 0       # the launcher cached: it is larger
    done = cubinrun(*sweep(300), flag, path, preexec_fn=_file_size_limit(10000))
    code, err = done.wait(timeout=300), done.stderr.read()
    assert code == 2 and err.strip().splitlines()[-1] == (
        f"error: cannot write {flag} {path}: File too large"), err
    if flag == "--jsonl":           # what reached the file is whole lines only
        assert 0 < len(whole_lines(path)) < 300
    else:                           # written whole or not at all: no cut file is left
        assert not path.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_stdout_fails_the_command():
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--dry-run",
                               str(VECTOR_ADD)], stdout=full, stderr=subprocess.PIPE, text=True,
                              cwd=REPO, timeout=120)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "error: cannot write to stdout: No space left on device; the output is lost"]


@pytest.mark.parametrize("flag", ["--jsonl", "--csv", "--markdown", "--junit"])
def test_a_result_file_in_a_missing_folder_is_refused_as_o_is(capsys, tmp_path, flag):
    from cubinrun.cli import main
    target = tmp_path / "nodir" / "r.out"
    with pytest.raises(SystemExit) as done:
        main(["launch", "--dry-run", str(VECTOR_ADD), flag, str(target)])
    assert done.value.code == 2
    assert capsys.readouterr().err.strip() == (
        f"error: cannot write {flag} {target}: no folder {target.parent}")
