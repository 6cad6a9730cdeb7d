"""The cache trusts only what its user wrote (issue 24): a launcher planted by
someone else (another owner, a folder others can write, a symlink) is never
imported; the run warns once and builds in a private folder instead.

The planted launcher is a real shared library, named and described by a .ref
exactly as cubinrun would (so a cache without the checks imports it), whose
constructor writes a marker file the moment it is loaded.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cubinrun.cache import folders, trust
from support.repo import REPO

pytestmark = pytest.mark.skipif(
    sys.platform == "win32",
    reason="POSIX only: Windows keeps access in ACLs, not owners and mode bits; "
           "the checks do not apply there")

OTHER_UID = 4242            # another user: files are given to it with os.chown (root only)
SPEC = REPO / "configs" / "vector_add.yaml"
WARNING = "warning: cache not used"


def needs_root():
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root (CI runs the suite as root)")


def dry_run(env_changes: dict, *, drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_changes)
    return subprocess.run([sys.executable, "-m", "cubinrun", "launch", str(SPEC), "--dry-run"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def entry_name(tmp_path_factory) -> str:
    """The launcher entry vector_add's dry run uses (its ref without .ref)."""
    cache_dir = tmp_path_factory.mktemp("learn") / "cache"
    done = dry_run({"CUBINRUN_CACHE_DIR": str(cache_dir)})
    assert done.returncode == 0, done.stderr
    [ref] = (cache_dir / "launchers").glob("*.ref")
    return ref.name.removesuffix(".ref")


@pytest.fixture(scope="module")
def planted_library(tmp_path_factory):
    """(library bytes, marker path): loading the library writes the marker."""
    folder = tmp_path_factory.mktemp("planted")
    marker = folder / "PLANTED-CODE-RAN"
    source = folder / "planted.c"
    source.write_text('#include <stdio.h>\n__attribute__((constructor)) static void planted(void)'
                      f' {{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(folder / "planted.so"), str(source)],
                   check=True)
    return (folder / "planted.so").read_bytes(), marker


def plant(launchers: Path, entry: str, library: bytes, owner: int | None = None,
          mode: int = 0o644) -> list[Path]:
    """The planted library as the entry's module, with the ref naming it."""
    launchers.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(library).hexdigest()
    module = launchers / f"{entry}.{digest[:16]}.abi3.so"
    ref = launchers / f"{entry}.ref"
    module.write_bytes(library)
    ref.write_text(f"{digest} {len(library)} {module.name}\n")
    for path in (module, ref):
        path.chmod(mode)
        if owner is not None:
            os.chown(path, owner, owner)
    return [module, ref]


def assert_warned_and_ran_clean(done, marker: Path, why: str):
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if WARNING in line]
    assert len(warnings) == 1 and why in warnings[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists(), "the planted launcher was loaded"
    assert "launcher" in done.stdout and "cubinrun-cache-" in done.stdout   # built privately


def give_tree(path: Path, uid: int) -> None:
    for folder, _, files in os.walk(path):
        os.chown(folder, uid, uid)
        for name in files:
            os.chown(os.path.join(folder, name), uid, uid)


def test_a_world_writable_cache_root_of_another_user(tmp_path, entry_name, planted_library):
    needs_root()
    library, marker = planted_library
    root = tmp_path / "cache"
    plant(root / "launchers", entry_name, library)
    give_tree(root, OTHER_UID)
    root.chmod(0o777)
    done = dry_run({"CUBINRUN_CACHE_DIR": str(root)})
    assert_warned_and_ran_clean(done, marker, f"belongs to uid {OTHER_UID}")


def test_own_cache_after_chmod_r_777(tmp_path, entry_name, planted_library):
    library, marker = planted_library
    root = tmp_path / "cache"
    plant(root / "launchers", entry_name, library)
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o777)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o777)
    done = dry_run({"CUBINRUN_CACHE_DIR": str(root)})
    assert_warned_and_ran_clean(done, marker, "writable by others")


def test_a_symlinked_launchers_folder(tmp_path, entry_name, planted_library):
    library, marker = planted_library
    elsewhere = tmp_path / "elsewhere"
    plant(elsewhere, entry_name, library, mode=0o600)
    elsewhere.chmod(0o700)
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    (root / "launchers").symlink_to(elsewhere)
    done = dry_run({"CUBINRUN_CACHE_DIR": str(root)})
    assert_warned_and_ran_clean(done, marker, "is a symlink")


@pytest.mark.parametrize("linked", ["module", "ref"])
def test_a_symlinked_entry(tmp_path, entry_name, planted_library, linked):
    library, marker = planted_library
    module, ref = plant(tmp_path / "elsewhere", entry_name, library, mode=0o600)
    launchers = tmp_path / "cache" / "launchers"
    launchers.mkdir(parents=True, mode=0o700)
    (tmp_path / "cache").chmod(0o700)
    if linked == "module":
        shutil.copy(ref, launchers / ref.name)
        (launchers / module.name).symlink_to(module)
    else:
        shutil.copy(module, launchers / module.name)
        (launchers / ref.name).symlink_to(ref)
    done = dry_run({"CUBINRUN_CACHE_DIR": str(tmp_path / "cache")})
    assert_warned_and_ran_clean(done, marker, "is a symlink")


@pytest.mark.parametrize("mode", [0o644, 0o600])
def test_entries_owned_by_another_user(tmp_path, entry_name, planted_library, mode):
    needs_root()
    library, marker = planted_library
    root = tmp_path / "cache"
    plant(root / "launchers", entry_name, library, owner=OTHER_UID, mode=mode)
    done = dry_run({"CUBINRUN_CACHE_DIR": str(root)})
    assert_warned_and_ran_clean(done, marker, f"belongs to uid {OTHER_UID}")


def test_xdg_cache_home_in_a_world_writable_folder_of_another_user(
        tmp_path, entry_name, planted_library):
    needs_root()
    library, marker = planted_library
    shared = tmp_path / "shared"
    plant(shared / "cubinrun" / "launchers", entry_name, library)
    give_tree(shared, OTHER_UID)
    for folder, _, _ in os.walk(shared):
        os.chmod(folder, 0o777)
    done = dry_run({"XDG_CACHE_HOME": str(shared)}, drop=("CUBINRUN_CACHE_DIR",))
    assert_warned_and_ran_clean(done, marker, "writable by others")


def test_a_cache_of_the_user_still_hits_without_a_warning(tmp_path):
    root = tmp_path / "cache"
    for _ in range(2):
        done = dry_run({"CUBINRUN_CACHE_DIR": str(root)})
        assert done.returncode == 0 and WARNING not in done.stderr, done.stderr
    assert str(root / "launchers") in done.stdout
    for path in (root, root / "launchers", root / "cubins"):
        assert path.stat().st_mode & 0o777 == 0o700


def test_a_read_only_cache_costs_a_compile_not_an_error(tmp_path, monkeypatch, capsys):
    """Root writes through any mode, so the read-only folder is what os.access says."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(root))
    (root / "nvrtc").mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    monkeypatch.setattr(trust.os, "access", lambda path, mode: False)
    folder = trust.folder("nvrtc", create=True)
    assert folder.parent.name.startswith("cubinrun-cache-") and folder.is_dir()
    [line] = capsys.readouterr().err.splitlines()
    assert WARNING in line and "cannot be written" in line


def test_a_cache_entry_replaced_by_a_folder_is_rebuilt(tmp_path, entry_name):
    root = tmp_path / "cache"
    assert dry_run({"CUBINRUN_CACHE_DIR": str(root)}).returncode == 0
    launchers = root / "launchers"
    for path in list(launchers.iterdir()):
        path.unlink()
        path.mkdir(mode=0o700)                      # every file of the entry now a folder
    done = dry_run({"CUBINRUN_CACHE_DIR": str(root)})
    assert done.returncode == 0, done.stderr
    assert "partial" not in done.stderr and "Traceback" not in done.stderr


# --- where the cache is without a home, and the checks themselves ------------

def test_without_home_or_passwd_entry_the_cache_is_this_uids_own(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.delenv("CUBINRUN_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = tmp_path / f"cubinrun-{os.geteuid()}"
    assert folders.cache_root() == root
    assert trust.folder("cubins", create=True) == root / "cubins"
    assert root.stat().st_mode & 0o777 == 0o700


def test_a_home_less_cache_created_first_by_another_user_is_not_used(tmp_path, monkeypatch,
                                                                     capsys):
    needs_root()
    import tempfile
    monkeypatch.delenv("CUBINRUN_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(lambda: (_ for _ in ()).throw(KeyError())))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    squatted = tmp_path / f"cubinrun-{os.geteuid()}"
    (squatted / "cubins").mkdir(parents=True)
    give_tree(squatted, OTHER_UID)
    folder = trust.folder("cubins", create=True)
    assert not folder.is_relative_to(squatted) and folder.parent.name.startswith("cubinrun-cache-")
    assert folder.parent.stat().st_mode & 0o777 == 0o700
    [line] = capsys.readouterr().err.splitlines()
    assert WARNING in line and f"belongs to uid {OTHER_UID}" in line


def test_cubin_facts_of_another_user_are_never_read(tmp_path, monkeypatch, capsys):
    needs_root()
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    facts = trust.folder("cubins", create=True) / ("ab" * 32 + ".json")
    facts.write_text("{}")
    os.chown(facts, OTHER_UID, OTHER_UID)
    assert trust.read(facts, 100) is None
    assert WARNING in capsys.readouterr().err
    assert os.environ["CUBINRUN_CACHE_DIR"] != str(tmp_path / "cache")   # the run left it


@pytest.mark.parametrize("kind", ["launchers", "nvrtc", "nvjitlink", "nvcc", "cubins"])
def test_the_scan_before_workers_start_covers_every_kind(tmp_path, monkeypatch, capsys, kind):
    """One warning in the launch process, whichever kind's folder holds the
    planted file (nvcc/ was once left out of the scan)."""
    needs_root()
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    planted = trust.folder(kind, create=True) / ("cd" * 32 + ".cubin")
    planted.write_bytes(b"x")
    os.chown(planted, OTHER_UID, OTHER_UID)
    trust.check_all()
    assert capsys.readouterr().err.count(WARNING) == 1
    assert os.environ["CUBINRUN_CACHE_DIR"] != str(tmp_path / "cache")
