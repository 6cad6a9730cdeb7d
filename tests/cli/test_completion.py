"""Shell completion through click's mechanism: `_CUBINRUN_COMPLETE=bash_source
cubinrun` prints the script (zsh_source, fish_source too), and the script asks
cubinrun for completions with COMP_WORDS / COMP_CWORD."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.repo import REPO

from cubinrun.cli import main


def complete(capsys, monkeypatch, words: str, shell: str = "bash") -> list[str]:
    """What cubinrun answers the completion script for the last word of `words`."""
    monkeypatch.setenv("_CUBINRUN_COMPLETE", f"{shell}_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split(" ")) - 1))
    with pytest.raises(SystemExit) as done:
        main([])
    assert done.value.code == 0
    return [line.split(",", 1)[1] for line in capsys.readouterr().out.splitlines() if line]


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o nosort -F _cubinrun_completion"),
                                           ("zsh", "compdef _cubinrun_completion cubinrun"),
                                           ("fish", "complete --no-files --command cubinrun")])
def test_the_completion_script_is_printed(capsys, monkeypatch, shell, marker):
    monkeypatch.setenv("_CUBINRUN_COMPLETE", f"{shell}_source")
    with pytest.raises(SystemExit) as done:
        main([])
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert marker in out and "_CUBINRUN_COMPLETE" in out


def test_subcommands_complete(capsys, monkeypatch):
    assert complete(capsys, monkeypatch, "cubinrun la") == ["launch"]
    assert complete(capsys, monkeypatch, "cubinrun p") == ["plot", "profile", "props"]
    assert complete(capsys, monkeypatch, "cubinrun cache ") == ["clear", "info", "prune"]


def test_spec_paths_complete_to_yaml_files_and_folders(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert complete(capsys, monkeypatch, "cubinrun launch configs/vector_add") == [
        "configs/vector_add.yaml", "configs/vector_add_source.yaml",
        "configs/vector_add_tuple.yaml"]
    assert "configs/bugs/" in complete(capsys, monkeypatch, "cubinrun launch configs/")
    monkeypatch.chdir(REPO / "configs")
    assert complete(capsys, monkeypatch, "cubinrun profile --set N=4 sc") == [
        "scalars.yaml", "scratch.yaml"]
    monkeypatch.chdir(REPO / "kernels")        # .cu files are not specs
    assert complete(capsys, monkeypatch, "cubinrun launch vector") == []


def test_result_files_complete_to_json_and_jsonl(capsys, monkeypatch, tmp_path):
    for name in ("base.jsonl", "base.json", "base.yaml", "base.png"):
        (tmp_path / name).write_text("")
    (tmp_path / "bench").mkdir()
    monkeypatch.chdir(tmp_path)
    assert complete(capsys, monkeypatch, "cubinrun compare ba") == ["base.json", "base.jsonl"]
    assert complete(capsys, monkeypatch, "cubinrun compare base.json b") == [
        "base.json", "base.jsonl", "bench/"]
    assert complete(capsys, monkeypatch, "cubinrun plot base.json ba") == [
        "base.json", "base.jsonl"]
    assert complete(capsys, monkeypatch, "cubinrun launch x.yaml --baseline ba") == [
        "base.json", "base.jsonl"]


def test_bash_runs_the_script(tmp_path):
    """The real script in a real bash, asking the installed `cubinrun`."""
    bash = shutil.which("bash")
    command = Path(sys.executable).parent / "cubinrun"
    if bash is None or not command.exists():
        pytest.skip("needs bash and the cubinrun command beside this Python")
    script = subprocess.run([str(command)], env={"_CUBINRUN_COMPLETE": "bash_source"},
                            capture_output=True, text=True, check=True).stdout
    (tmp_path / "completion.bash").write_text(script)
    probe = ('source completion.bash; COMP_WORDS=(cubinrun launch "$WORD"); COMP_CWORD=2; '
             '_cubinrun_completion cubinrun; printf "%s\\n" "${COMPREPLY[@]}"')
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "add.yaml").write_text("{}\n")
    (tmp_path / "configs" / "add.cu").write_text("\n")
    out = subprocess.run([bash, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                         env={"PATH": f"{command.parent}:/usr/bin:/bin", "WORD": "configs/a"},
                         check=True).stdout
    assert out.split() == ["configs/add.yaml"]
