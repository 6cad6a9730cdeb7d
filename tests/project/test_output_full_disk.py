"""An output that cannot be written (a full disk) is one line naming the flag
and the file, exit 2, and leaves no temporary file behind; an empty path
given to an output flag is a usage error naming the flag (issue 46). The disk
is a real full one: a small tmpfs filled up (skipped where mount is refused)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from support.outputcases import VECTOR_ADD, cubinrun, history_db, landscape  # noqa: F401 (fixtures)
from support.fake_vector_add import vector_add  # noqa: F401  (the fixture)

FULL = "No space left on device"


def last_line(done: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def full_disk(tmp_path_factory):
    """A folder on a 64 KiB tmpfs with no byte free."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root on Linux")
    folder = tmp_path_factory.mktemp("full")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                             capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"mount refused: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        with open(folder / "filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@pytest.fixture
def full(full_disk):
    """The full folder, with nothing but the filler in it afterwards."""
    yield full_disk
    left = sorted(p.name for p in full_disk.iterdir() if p.name != "filler")
    for name in left:
        path = full_disk / name
        path.unlink() if not path.is_dir() else subprocess.run(["rm", "-rf", str(path)])
    assert not [name for name in left if name.endswith(".tmp")], left


@pytest.mark.parametrize("flag, name", [("--csv", "r.csv"), ("--junit", "r.xml"),
                                        ("--markdown", "r.md"), ("--jsonl", "r.jsonl")])
def test_a_result_file_on_a_full_disk(full, flag, name):
    target = full / name
    done = cubinrun("launch", "--dry-run", VECTOR_ADD, flag, target)
    assert done.returncode == 2 and last_line(done) == f"error: cannot write {flag} {target}: {FULL}"
    assert [p.name for p in full.iterdir() if p.name != "filler"] in ([], [name])
    assert not target.exists() or target.stat().st_size == 0


@pytest.mark.parametrize("command", [["gen", "--signature", "*fp32,i32"], ["schema"]])
def test_dash_o_on_a_full_disk(full, command):
    target = full / "out.txt"
    done = cubinrun(*command, "-o", target)
    assert done.returncode == 2 and last_line(done) == f"error: cannot write -o {target}: {FULL}"
    assert [p.name for p in full.iterdir()] == ["filler"]


def test_repro_on_a_full_disk(full):
    done = cubinrun("repro", VECTOR_ADD, "-o", full / "r", "--arch", "sm_90")
    line = last_line(done)
    assert done.returncode == 2 and line.startswith(f"error: cannot write -o {full / 'r'}/")
    assert line.endswith(FULL)


def test_tune_o_on_a_full_disk(full, landscape):
    spec, results = landscape
    best = full / "best.yaml"
    done = cubinrun("tune", spec, "--replay", results, "--strategy", "brute", "-o", best)
    assert done.returncode == 2 and last_line(done) == f"error: cannot write -o {best}: {FULL}"
    assert [p.name for p in full.iterdir()] == ["filler"]


def test_history_check_markdown_on_a_full_disk(full, history_db):
    summary = full / "summary.md"
    done = cubinrun("history", "check", "--db", history_db, "--branch", "main",
                    "--markdown", summary)
    assert done.returncode == 2
    assert last_line(done) == f"error: cannot write --markdown {summary}: {FULL}"


def test_history_report_on_a_full_disk(full, history_db):
    folder = full / "report"
    done = cubinrun("history", "report", "--db", history_db, "--branch", "main", "-o", folder)
    line = last_line(done)
    assert done.returncode == 2 and line.startswith(f"error: cannot write -o {folder}/")
    assert line.endswith(FULL)
    assert not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_save_on_a_full_disk(full, vector_add, tmp_path, capsys):
    """`save:` of a run on the fake driver: one line naming the field and the
    file, exit 2, and no temporary file left."""
    from support.cli import run as run_cli
    from support.fake_vector_add import BIG_N, vector_add_copy
    spec = vector_add_copy(tmp_path)
    saved = full / "out.npy"
    spec.write_text(spec.read_text().replace(
        "out: {shape: [N], init: zeros}", f"out: {{shape: [N], init: zeros, save: '{saved}'}}"))
    code, _, err = run_cli(capsys, "launch", "--no-bench", spec, "--set", f"N={BIG_N}")
    assert code == 2 and f"cannot write save: {saved}: {FULL}" in err, err
    assert [p.name for p in full.iterdir()] == ["filler"]


# --- an empty path ------------------------------------------------------------------

@pytest.mark.parametrize("args, flag", [
    (["launch", "--dry-run", VECTOR_ADD, "--jsonl", ""], "--jsonl"),
    (["launch", "--dry-run", VECTOR_ADD, "--csv", ""], "--csv"),
    (["launch", "--dry-run", VECTOR_ADD, "--junit", ""], "--junit"),
    (["launch", "--dry-run", VECTOR_ADD, "--markdown", ""], "--markdown"),
    (["repro", VECTOR_ADD, "--arch", "sm_90", "-o", ""], "-o"),
    (["profile", VECTOR_ADD, "-o", ""], "-o"),
], ids=["jsonl", "csv", "junit", "markdown", "repro", "profile"])
def test_an_empty_output_path_is_a_usage_error(tmp_path, args, flag):
    done = cubinrun(*args, cwd=tmp_path)
    assert done.returncode == 2 and last_line(done) == (
        f"error: {flag} '': an empty path names no file"), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_tune_o_empty_is_a_usage_error(landscape, tmp_path):
    spec, results = landscape
    for flag in ("-o", "--plot"):
        done = cubinrun("tune", spec, "--replay", results, "--strategy", "brute", flag, "")
        assert done.returncode == 2 and last_line(done) == (
            f"error: {flag} '': an empty path names no file"), done.stderr


def test_history_outputs_empty_are_usage_errors(history_db, tmp_path):
    for args in (["report", "-o", ""], ["check", "--markdown", ""]):
        done = cubinrun("history", args[0], "--db", history_db, "--branch", "main", *args[1:],
                        cwd=tmp_path)
        assert done.returncode == 2 and last_line(done) == (
            f"error: {args[1]} '': an empty path names no file"), done.stderr
        assert list(tmp_path.iterdir()) == []
