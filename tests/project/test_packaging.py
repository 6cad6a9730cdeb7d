"""What users install holds what the package reads at run time.

Data files are everything under cubinrun/ that is not Python. The rule that
ships them (MANIFEST.in grafts cubinrun/, include-package-data puts the
sdist's files in the wheel) is checked here; .ci/wheel builds the real wheel,
installs it, and runs this suite against the install with
CUBINRUN_TEST_INSTALLED=1, where the checks below see the wheel's RECORD.
"""
from __future__ import annotations

import importlib.metadata
import importlib.resources
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.repo import INSTALLED, REPO

import cubinrun
from cubinrun.specfile.schema import SCHEMA_FILE

SOURCE_PACKAGE = REPO / "cubinrun"
# How modules name the files they open beside them.
_READS = re.compile(r"""(?:with_name|joinpath)\(\s*["']([^"']+)["']\s*\)""")


def data_files() -> list[str]:
    """Every non-Python file of the package in the source tree, relative to it."""
    return sorted(p.relative_to(SOURCE_PACKAGE).as_posix()
                  for p in SOURCE_PACKAGE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".py")


def files_read_by_modules() -> set[str]:
    """The files modules open with `Path(__file__).with_name(...)` or
    `resources.files("cubinrun").joinpath(...)`, relative to the package."""
    found = set()
    for module in SOURCE_PACKAGE.rglob("*.py"):
        folder = module.parent.relative_to(SOURCE_PACKAGE)
        text = module.read_text()
        for name in _READS.findall(text):
            if "resources.files" in text and "/" in name:
                found.add(name)
            else:
                found.add((folder / name).as_posix())
    return found


def test_the_source_tree_has_the_files_modules_read():
    read = files_read_by_modules()
    assert {"data/timing_kernels.ptx", "launcher/template.c", "debug/repro_template.c"} <= read
    assert read | {SCHEMA_FILE} <= set(data_files())


def test_every_data_file_is_in_the_imported_package():
    package = importlib.resources.files("cubinrun")
    missing = [name for name in data_files() if not package.joinpath(name).is_file()]
    assert not missing, f"not installed: {missing}"


def test_packaging_rule_cannot_miss_a_new_file():
    manifest = (REPO / "MANIFEST.in").read_text().split("\n")
    assert "graft cubinrun" in manifest
    config = (REPO / "pyproject.toml").read_text()
    assert re.search(r"^include-package-data = true$", config, re.M)
    assert "[tool.setuptools.package-data]" not in config       # no list of names to forget


@pytest.mark.skipif(not INSTALLED, reason="runs against an installed wheel (.ci/wheel)")
def test_installed_package_is_not_the_checkout():
    assert REPO not in Path(cubinrun.__file__).resolve().parents
    where = subprocess.run([sys.executable, "-c", "import cubinrun; print(cubinrun.__file__)"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    assert REPO not in Path(where).resolve().parents       # subprocesses started in REPO too


@pytest.mark.skipif(not INSTALLED, reason="runs against an installed wheel (.ci/wheel)")
def test_the_wheel_record_lists_every_data_file():
    recorded = {f.as_posix() for f in importlib.metadata.files("cubinrun")}
    missing = [name for name in data_files() if f"cubinrun/{name}" not in recorded]
    assert not missing, f"the wheel lacks {missing}"
    assert any(name.endswith("licenses/LICENSE") for name in recorded)


@pytest.mark.skipif(not INSTALLED, reason="runs against an installed wheel (.ci/wheel)")
def test_the_wheel_metadata_is_complete():
    meta = importlib.metadata.metadata("cubinrun")
    assert meta["License-Expression"] == "MIT"
    assert any(c.startswith("Environment :: GPU") for c in meta.get_all("Classifier"))
    assert set(meta.get_all("Provides-Extra")) >= {"plot", "ray", "sanitize", "test"}


def test_the_classifiers_name_every_system_it_runs_on():
    """Linux and Windows x64 (README "On Windows"), so an index shows both."""
    text = (REPO / "pyproject.toml").read_text()
    for system in ("Operating System :: POSIX :: Linux",
                   "Operating System :: Microsoft :: Windows"):
        assert f'"{system}"' in text
