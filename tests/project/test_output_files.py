"""Files cubinrun writes for a user (issue 24): regular files only (a FIFO,
device or folder is exit 2 and one line, never a hang), never written through
a link, and one overwrite rule for every -o: an existing file needs --force,
and each write says "wrote X" once."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cubinrun.files import OutputFile, write_output
from cubinrun.errors import UsageError
from support.platforms import skip_on_windows
from support.cli import run
from support.repo import CUBINS, REPO

CUBIN = CUBINS / "vector_add.sm_90.cubin"
SOURCE = REPO / "kernels" / "vector_add.cu"
VECTOR_ADD = REPO / "configs" / "vector_add.yaml"

# Each command that takes -o, with what it needs besides -o.
DASH_O = {
    "gen": ["gen", "--signature", "*fp32,i32"],
    "schema": ["schema"],
    "init": ["init", CUBIN],
    "compile": ["compile", SOURCE, "--arch", "sm_90"],
}


def error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", DASH_O)
def test_a_fifo_is_refused_with_or_without_force(capsys, tmp_path, command):
    skip_on_windows("FIFOs are POSIX")
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    for force in ([], ["--force"]):
        code, out, err = run(capsys, *DASH_O[command], "-o", fifo, *force)
        assert code == 2 and "is a FIFO, not a regular file" in error_line(err)


@pytest.mark.parametrize("command", DASH_O)
def test_an_existing_file_needs_force_and_a_write_says_so_once(capsys, tmp_path, command):
    target = tmp_path / "out"
    target.write_text("mine")
    code, _, err = run(capsys, *DASH_O[command], "-o", target)
    assert code == 2 and error_line(err) == f"error: {target} exists; pass --force to overwrite it"
    assert target.read_text() == "mine"
    code, _, err = run(capsys, *DASH_O[command], "-o", target, "--force")
    assert code == 0 and target.read_bytes() != b"mine", err
    assert [line for line in err.splitlines() if line.startswith("wrote ")] == [
        line for line in err.splitlines() if str(target) in line] and f"wrote {target}" in err


@pytest.mark.parametrize("command", DASH_O)
def test_a_link_is_replaced_never_written_through(capsys, tmp_path, command):
    skip_on_windows("symlinks need a privilege on Windows")
    victim = tmp_path / "victim"
    victim.write_text("not cubinrun's")
    link = tmp_path / "out"
    link.symlink_to(victim)
    code, _, err = run(capsys, *DASH_O[command], "-o", link, "--force")
    assert code == 0, err
    assert victim.read_text() == "not cubinrun's" and not link.is_symlink()


@pytest.mark.parametrize("command", ["gen", "schema", "init"])
def test_an_empty_output_path_is_a_usage_error(capsys, command):
    code, out, err = run(capsys, *DASH_O[command], "-o", "")
    assert code == 2 and out == "" and "an empty path names no file" in error_line(err)


def test_a_folder_is_refused(tmp_path):
    (tmp_path / "plot.png").mkdir()
    with pytest.raises(UsageError, match="plot.png: is a folder, not a regular file"):
        write_output(tmp_path / "plot.png", b"", force=True)


def test_write_output_keeps_a_file_that_appears_meanwhile(tmp_path, monkeypatch):
    """Without force the name is taken with link(), which fails when it exists:
    a file made between the check and the write is kept."""
    target = tmp_path / "out"
    real_link = os.link

    def racing_link(src, dst):
        Path(dst).write_text("theirs")
        real_link(src, dst)
    monkeypatch.setattr(os, "link", racing_link)
    with pytest.raises(UsageError, match="exists; pass --force"):
        write_output(target, "mine", force=False)
    assert target.read_text() == "theirs" and os.listdir(tmp_path) == ["out"]


def test_an_aborted_output_leaves_the_old_file(tmp_path):
    target = tmp_path / "x.npy"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with OutputFile(target) as out:
            out.file.write(b"half")
            raise RuntimeError("the run failed")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["x.npy"]


# --- save: -----------------------------------------------------------------------

def save_spec(tmp_path: Path, save: Path) -> Path:
    text = VECTOR_ADD.read_text().replace("../kernels", str(REPO / "kernels"))
    text = text.replace("out: {shape: [N], init: zeros}", f"out: {{shape: [N], save: '{save}'}}")
    assert "save:" in text, "vector_add.yaml changed: update this test"
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    return spec


def test_save_to_a_fifo_is_refused_when_the_spec_is_read(capsys, tmp_path):
    skip_on_windows("FIFOs are POSIX")
    fifo = tmp_path / "out.npy"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "launch", "--dry-run", save_spec(tmp_path, fifo))
    line = error_line(err)
    assert code == 2 and "args.out.save" in line and "is a FIFO" in line and "spec.yaml" in line


# --- repro -o DIR ------------------------------------------------------------------

def test_repro_keeps_an_existing_reproducer_unless_forced(capsys, tmp_path):
    skip_on_windows("repro writes a POSIX reproducer")
    folder = tmp_path / "r"
    code, _, err = run(capsys, "repro", VECTOR_ADD, "-o", folder, "--arch", "sm_90")
    assert code == 0, err
    (folder / "repro.c").write_text("edited")
    code, _, err = run(capsys, "repro", VECTOR_ADD, "-o", folder, "--arch", "sm_90")
    assert code == 2 and "pass --force" in error_line(err)
    assert (folder / "repro.c").read_text() == "edited"
    code, _, err = run(capsys, "repro", VECTOR_ADD, "-o", folder, "--arch", "sm_90", "--force")
    assert code == 0 and (folder / "repro.c").read_text() != "edited", err


def test_repro_never_writes_or_chmods_through_a_planted_run_sh(capsys, tmp_path):
    skip_on_windows("symlinks and modes are POSIX")
    victim = tmp_path / "victim"
    victim.write_text("precious")
    victim.chmod(0o600)
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "run.sh").symlink_to(victim)
    code, _, err = run(capsys, "repro", VECTOR_ADD, "-o", folder, "--arch", "sm_90", "--force")
    assert code == 0, err
    assert victim.read_text() == "precious" and victim.stat().st_mode & 0o777 == 0o600
    run_sh = folder / "run.sh"
    assert not run_sh.is_symlink() and run_sh.stat().st_mode & 0o100


def test_repro_refuses_a_linked_subfolder(capsys, tmp_path):
    skip_on_windows("symlinks need a privilege on Windows")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "inputs").symlink_to(elsewhere)
    code, _, err = run(capsys, "repro", VECTOR_ADD, "-o", folder, "--arch", "sm_90", "--force")
    assert code == 2 and "inputs is not a folder of its own" in error_line(err)
    assert os.listdir(elsewhere) == []


# --- plot -o -----------------------------------------------------------------------

def test_plot_keeps_an_existing_file_unless_forced(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "p.png"
    target.write_bytes(b"mine")
    results = tmp_path / "r.jsonl"
    results.write_text("")
    code, _, err = run(capsys, "plot", results, "-o", target)
    assert code == 2 and error_line(err) == f"error: {target} exists; pass --force to overwrite it"
    assert target.read_bytes() == b"mine"


@pytest.mark.parametrize("flag", ["--csv", "--jsonl", "--markdown", "--junit"])
def test_a_result_file_that_is_a_fifo_is_refused_before_any_run(capsys, tmp_path, flag):
    skip_on_windows("FIFOs are POSIX")
    fifo = tmp_path / "results"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "launch", VECTOR_ADD, flag, fifo)
    assert code == 2 and f"{flag} {fifo}: is a FIFO" in error_line(err)


def test_a_link_to_a_terminal_or_pipe_is_refused_not_replaced(capsys, tmp_path):
    """`-o /dev/stdout` as root would otherwise replace /dev/stdout itself."""
    skip_on_windows("FIFOs are POSIX")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "stdout").symlink_to(fifo)
    code, _, err = run(capsys, "gen", "--signature", "i32", "-o", tmp_path / "stdout", "--force")
    assert code == 2 and "is a link to a FIFO" in error_line(err)
    assert (tmp_path / "stdout").is_symlink()
