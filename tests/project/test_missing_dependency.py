"""A module that is not installed names the package (and the extra) to
install, and no run's status says "CUDA error" unless a CUDA call failed."""
from __future__ import annotations

import sys

import pytest

from cubinrun.cli import main
from cubinrun.errors import CudaError
from cubinrun.missing import missing_dependency
from cubinrun.results.writers import summarize
from cubinrun.runs.expand import RunTask
from cubinrun.runs.outcome import RunRecord
from support.repo import REPO

CUBIN = REPO / "kernels" / "build" / "vector_add.sm_90.cubin"


def absent(name: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"No module named '{name}'", name=name)


@pytest.mark.parametrize("module, fix", [
    ("elftools", "pip install pyelftools (a dependency of cubinrun: its install is incomplete)"),
    ("elftools.elf.elffile", "pip install pyelftools (a dependency"),
    ("matplotlib", "pip install 'cubinrun[plot]' (which brings matplotlib)"),
    ("pynvml", "pip install 'cubinrun[energy]' (which brings nvidia-ml-py)"),
    ("optuna", "pip install 'cubinrun[tune]' (which brings optuna)"),
    ("left_pad", "install the package that provides it (pip install left_pad?)"),
])
def test_the_package_and_extra_are_named(module, fix):
    error = missing_dependency(absent(module))
    assert str(error).startswith(f"no module named '{module.split('.')[0]}': {fix}")
    assert error.exit_code == 2


def test_a_module_several_extras_bring_names_the_command_s_extra():
    assert "cubinrun[history]" in str(missing_dependency(absent("sqlalchemy"), "history"))
    assert "cubinrun[tune]" in str(missing_dependency(absent("sqlalchemy"), "tune"))
    assert "cubinrun[tune]" in str(missing_dependency(absent("sqlalchemy"), "launch"))


def test_a_missing_module_of_cubinrun_itself_stays_a_bug():
    assert missing_dependency(absent("cubinrun.nothing")) is None


def test_run_statuses_say_what_failed_not_cuda():
    task = RunTask(0, "s.yaml", point={"N": 1})
    records = [RunRecord.failed(task, absent("elftools")), RunRecord.failed(task, KeyError("x")),
               RunRecord.failed(task, CudaError("cuLaunchKernel failed"))]
    assert [r.status for r in records] == ["missing package", "internal error", "CUDA error"]
    assert [r.exit_code for r in records] == [2, 4, 4]
    assert "pip install pyelftools" in records[0].error_line()
    summary = summarize([r.to_json() for r in records], 4)
    assert summary["statuses"] == {"missing package": 1, "internal error": 1, "CUDA error": 1}


def test_a_command_without_pyelftools_is_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path))    # no parsed cubin to reuse
    for name in [n for n in sys.modules if n == "elftools" or n.startswith("elftools.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "elftools", None)
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(CUBIN)])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: no module named 'elftools': pip install pyelftools (a dependency of cubinrun: "
        "its install is incomplete)"]
