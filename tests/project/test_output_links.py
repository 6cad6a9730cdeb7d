"""Every output flag of every command meets a planted link the same way
(issue 46): the link is replaced by a regular file of cubinrun's, its target
never written. Each case is a real `cubinrun` process writing through a real
symlink in a temporary folder."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.platforms import skip_on_windows
from support.outputcases import VECTOR_ADD, cubinrun, history_db, landscape  # noqa: F401 (fixtures)
from support.repo import CUBINS
from support.stand_in_ncu import stand_in  # noqa: F401  (the fixture)

CUBIN = CUBINS / "vector_add.sm_90.cubin"
PRECIOUS = "the user's own file, not cubinrun's\n"


@pytest.fixture
def planted(tmp_path):
    """plant(name): a link `name` in tmp_path to a file that holds PRECIOUS."""
    skip_on_windows("symlinks need a privilege on Windows")
    victim = tmp_path / "victim.txt"
    victim.write_text(PRECIOUS)

    def plant(name: str) -> Path:
        link = tmp_path / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(victim)
        return link
    yield plant
    assert victim.read_text() == PRECIOUS          # never written through


def replaced(link: Path) -> str:
    """What cubinrun wrote in place of `link`: a regular file of its own."""
    assert not link.is_symlink() and link.is_file(), link
    return link.read_text()


@pytest.mark.parametrize("flag", ["--jsonl", "--csv", "--junit", "--markdown"])
def test_launch_result_files_replace_a_link(planted, flag):
    link = planted("results.out")
    done = cubinrun("launch", "--dry-run", VECTOR_ADD, flag, link)
    assert done.returncode == 0, done.stderr
    assert "vector_add" in replaced(link)


def test_jsonl_append_replaces_a_link_too(planted):
    link = planted("all.jsonl")
    for _ in range(2):
        done = cubinrun("launch", "--dry-run", VECTOR_ADD, "--jsonl", link, "--append")
        assert done.returncode == 0, done.stderr
    assert len(replaced(link).splitlines()) == 2          # the second run added to the new file


def test_the_step_summary_added_to_replaces_a_link(planted):
    link = planted("summary.md")
    done = cubinrun("launch", "--dry-run", VECTOR_ADD, "--markdown", link,
                    env={"GITHUB_STEP_SUMMARY": str(link)})
    assert done.returncode == 0, done.stderr
    assert "### cubinrun" in replaced(link)


@pytest.mark.parametrize("command", [["gen", "--signature", "*fp32,i32"], ["schema"],
                                     ["init", CUBIN], ["compile", VECTOR_ADD.parent.parent /
                                                      "kernels" / "vector_add.cu", "--arch",
                                                      "sm_90"]],
                         ids=["gen", "schema", "init", "compile"])
def test_dash_o_of_each_command_replaces_a_link(planted, command):
    if command[0] == "compile":
        pytest.importorskip("cuda.bindings.nvrtc", reason="compile needs NVRTC")
    link = planted("out")
    done = cubinrun(*command, "-o", link, "--force")
    assert done.returncode == 0, done.stderr
    assert not link.is_symlink() and link.read_bytes() != PRECIOUS.encode()


def test_plot_o_replaces_a_link(planted, tmp_path):
    pytest.importorskip("matplotlib")
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps({"spec": "s.yaml", "point": {"N": n}, "exit_code": 0,
                                           "status": "ok", "timing": {"median_us": n / 100}})
                               + "\n" for n in (256, 1024, 4096)))
    link = planted("p.png")
    done = cubinrun("plot", results, "-o", link, "--force")
    assert done.returncode == 0, done.stderr
    assert not link.is_symlink() and link.read_bytes().startswith(b"\x89PNG")


def test_tune_o_and_plot_replace_a_link(planted, landscape):
    spec, results = landscape
    best = planted("best.yaml")
    done = cubinrun("tune", spec, "--replay", results, "--strategy", "brute", "-o", best,
                    "--force")
    assert done.returncode == 0, done.stderr
    assert replaced(best).startswith("# tuned by cubinrun tune")
    pytest.importorskip("matplotlib")
    plot = planted("tune.png")
    done = cubinrun("tune", spec, "--replay", results, "--strategy", "brute", "--plot", plot)
    assert done.returncode == 0, done.stderr
    assert not plot.is_symlink() and plot.read_bytes().startswith(b"\x89PNG")


def test_history_check_markdown_replaces_a_link(planted, history_db):
    link = planted("summary.md")
    done = cubinrun("history", "check", "--db", history_db, "--branch", "main",
                    "--markdown", link)
    assert done.returncode == 0, done.stderr
    assert "1 series checked" in replaced(link)


def test_history_report_replaces_linked_pages(planted, history_db, tmp_path):
    index = planted("report/index.html")
    done = cubinrun("history", "report", "--db", history_db, "--branch", "main", "-o",
                    index.parent, "--force")
    assert done.returncode == 0, done.stderr
    assert "<html" in replaced(index)


def test_repro_replaces_a_linked_cubin(planted, tmp_path):
    skip_on_windows("repro writes a POSIX reproducer")
    cubin = planted("r/kernel.cubin")
    done = cubinrun("repro", VECTOR_ADD, "-o", cubin.parent, "--arch", "sm_90", "--force")
    assert done.returncode == 0, done.stderr
    assert not cubin.is_symlink() and cubin.read_bytes().startswith(b"\x7fELF")


def test_a_cache_entry_replaces_a_link(planted):
    """A cache write is a new file that takes the name (the cache's trust
    checks refuse a linked folder before this)."""
    from cubinrun.cache.folders import write_atomically
    entry = planted("cache/entry.bin")
    write_atomically(entry, b"cached")
    assert not entry.is_symlink() and entry.read_bytes() == b"cached"
    assert [p.name for p in entry.parent.iterdir()] == ["entry.bin"]


def test_profile_o_replaces_a_link(planted, stand_in, capsys):
    """ncu writes its report in a private folder; -o takes a copy as every
    output is written (ncu itself would write through the link)."""
    from support.cli import run as run_cli
    stand_in()
    link = planted("kept.ncu-rep")
    code, _, err = run_cli(capsys, "profile", "-o", link, VECTOR_ADD)
    assert code == 0, err
    assert not link.is_symlink() and link.is_file()
