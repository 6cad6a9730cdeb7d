"""Where the cache is, `cubinrun cache info|clear|prune`, and the pruning of
entries nobody used for a month (issue 17)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cubinrun.cache import folders as cache, entries as cache_entries
from cubinrun.binary.cubin_cache import read_cubin_cached

from support.cli import run
from support.repo import CUBINS
from support.platforms import skip_on_windows, skip_under_wine

KEY = "ab" * 32
OTHER = "cd" * 32
DAY = 24 * 3600
LAUNCHER = "cubinrun_launcher_0123456789abcdef.0123456789abcdef01234567.cpython-311-x86_64-linux-gnu.so"


# --- where ----------------------------------------------------------------

def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    skip_on_windows("XDG_CACHE_HOME is not used on Windows (%LOCALAPPDATA% is)")
    monkeypatch.delenv("CUBINRUN_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    assert cache.cache_root() == tmp_path / ".cache" / "cubinrun"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "cubinrun"
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", "anywhere")
    assert cache.cache_root() == Path("anywhere")


# --- a cache with a bit of everything ----------------------------------------

@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    files = {
        f"launchers/{LAUNCHER}": 1000, f"launchers/.{LAUNCHER}.x1y2.partial": 10,
        f"nvrtc/{KEY}.cubin": 300, f"nvrtc/{KEY}.json": 30,
        f"nvjitlink/{OTHER}.cubin": 200, f"nvjitlink/{OTHER}.json": 20,
        f"cubins/{KEY}.json": 50, f"cubins/{OTHER}.json": 60,
        f"cubins/{KEY}.json.k3j4.tmp": 5,
        "cubins/notes.txt": 7, "README": 7,           # not cubinrun's: never listed or removed
    }
    for name, size in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x" * size)
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(root))
    return root


def info(capsys) -> dict:
    code, out, err = run(capsys, "cache", "info", "--json")
    assert code == 0, err
    return json.loads(out)


def test_info_counts_entries_and_bytes_of_each_kind(capsys, root):
    document = info(capsys)
    kinds = document["kinds"]
    assert document["root"] == str(root)
    assert {k: v["entries"] for k, v in kinds.items()} == \
        {"launchers": 1, "nvrtc": 1, "nvjitlink": 1, "nvcc": 0, "cubins": 2}
    assert {k: v["bytes"] for k, v in kinds.items()} == \
        {"launchers": 1010, "nvrtc": 330, "nvjitlink": 220, "nvcc": 0, "cubins": 115}
    assert kinds["launchers"]["temporary_files"] == 1 and kinds["cubins"]["temporary_files"] == 1
    assert document["bytes"] == 1010 + 330 + 220 + 115
    assert document["prune"]["unused_days"] == cache.PRUNE_UNUSED_DAYS


def test_info_as_text_names_the_folder_and_the_policy(capsys, root):
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and out.startswith(f"cache {root}\n")
    assert "launchers" in out and "parsed cubin facts" in out and "30 days" in out


def test_info_on_a_cache_not_created_yet(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "none"))
    code, out, _ = run(capsys, "cache", "info")
    assert code == 0 and "(not created yet)" in out


@pytest.mark.parametrize("flags, gone, kept", [
    ((), {"launchers", "nvrtc", "nvjitlink", "cubins"}, set()),
    (("--launchers",), {"launchers"}, {"nvrtc", "nvjitlink", "cubins"}),
    (("--nvrtc",), {"nvrtc", "nvjitlink"}, {"launchers", "cubins"}),
    (("--cubins", "--launchers"), {"cubins", "launchers"}, {"nvrtc", "nvjitlink"}),
])
def test_clear_removes_the_kinds_named_and_nothing_else(capsys, root, flags, gone, kept):
    code, _, err = run(capsys, "cache", "clear", *flags)
    assert code == 0 and err.startswith("removed ") and f"from {root}" in err
    kinds = info(capsys)["kinds"]
    assert all(kinds[k]["entries"] == 0 and kinds[k]["bytes"] == 0 for k in gone)
    assert all(kinds[k]["entries"] > 0 for k in kept)
    assert (root / "README").exists() and (root / "cubins" / "notes.txt").exists()


def test_clear_removes_links_without_following_them(capsys, root, tmp_path):
    precious = tmp_path / "precious.json"
    precious.write_text("{}")
    (root / "cubins" / f"{'ef' * 32}.json").symlink_to(precious)
    code, _, _ = run(capsys, "cache", "clear", "--cubins")
    assert code == 0 and precious.read_text() == "{}"
    assert not (root / "cubins" / f"{'ef' * 32}.json").is_symlink()


def test_clear_keeps_what_it_cannot_remove_and_says_so(capsys, root, monkeypatch):
    """On Windows a loaded launcher cannot be deleted: clear goes on and exits 0."""
    real_unlink = os.unlink

    def unlink(path, *args, **kwargs):
        if str(path).endswith(".so"):
            raise PermissionError(13, "Access is denied", str(path))
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(cache_entries.os, "unlink", unlink)
    code, out, err = run(capsys, "cache", "clear", "--json")
    document = json.loads(out)
    assert code == 0 and document["removed"] == {"launchers": 0, "nvrtc": 1, "nvjitlink": 1, "nvcc": 0,
                                                 "cubins": 2}
    assert [k["path"] for k in document["kept"]] == [str(root / "launchers" / LAUNCHER)]
    code, _, err = run(capsys, "cache", "clear")
    assert code == 0 and "kept 1 file that could not be removed: " in err and \
        "Access is denied" in err


# --- pruning ------------------------------------------------------------------

def age(path: Path, days: float) -> None:
    then = time.time() - days * DAY
    os.utime(path, (then, then))


def test_prune_removes_entries_unused_for_the_period(root):
    for name in (f"nvrtc/{KEY}.cubin", f"nvrtc/{KEY}.json", f"cubins/{KEY}.json"):
        age(root / name, 40)
    age(root / f"cubins/{KEY}.json.k3j4.tmp", 2)         # an unfinished write: a day is enough
    done = cache_entries.prune(root, 30 * DAY)
    assert done.removed == {"launchers": 0, "nvrtc": 1, "nvjitlink": 0, "nvcc": 0, "cubins": 1}
    assert not (root / "nvrtc" / f"{KEY}.cubin").exists()
    assert (root / "cubins" / f"{OTHER}.json").exists()
    assert not (root / "cubins" / f"{KEY}.json.k3j4.tmp").exists()
    assert (root / "launchers" / f".{LAUNCHER}.x1y2.partial").exists()   # still being written?


def test_an_entry_is_as_recent_as_its_latest_file(root):
    age(root / f"nvrtc/{KEY}.cubin", 40)                 # its JSON was used just now
    assert cache_entries.prune(root, 30 * DAY).removed["nvrtc"] == 0


def test_prune_command_takes_days(capsys, root):
    age(root / f"cubins/{OTHER}.json", 3)
    code, out, _ = run(capsys, "cache", "prune", "--days", "2", "--json")
    assert code == 0 and json.loads(out)["removed"]["cubins"] == 1


def test_writing_to_the_cache_prunes_at_most_once_a_day(root):
    skip_under_wine("the aged entry is not pruned under Wine 8; to check on Windows")
    stale = root / "cubins" / f"{OTHER}.json"
    age(stale, 40)
    (root / cache.PRUNE_STAMP).touch()                   # pruned an hour ago: not due
    read_cubin_cached((CUBINS / "vector_add.sm_90.cubin").read_bytes(), "v.cubin")
    assert stale.exists()
    age(root / cache.PRUNE_STAMP, 2)                     # due: the next write prunes
    read_cubin_cached((CUBINS / "empty.sm_90.cubin").read_bytes(), "e.cubin")
    assert not stale.exists()
    assert time.time() - (root / cache.PRUNE_STAMP).stat().st_mtime < 60


def test_a_hit_marks_the_entry_used(root):
    data = (CUBINS / "vector_add.sm_90.cubin").read_bytes()
    read_cubin_cached(data, "v.cubin")
    entry = next(p for p in (root / "cubins").glob("*.json") if p.name not in
                 (f"{KEY}.json", f"{OTHER}.json"))
    age(entry, 40)
    read_cubin_cached(data, "v.cubin")                   # a hit, 40 days later
    assert time.time() - entry.stat().st_atime < 60
    assert cache_entries.prune(root, 30 * DAY).removed["cubins"] == 0 and entry.exists()


def test_a_cache_that_cannot_be_pruned_is_no_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a folder")
    cache.prune_now_and_then()
    cache.mark_used(tmp_path / "file" / "missing.json")


def test_flags_reach_the_cache_commands_too(capsys, root):
    code, out, _ = run(capsys, "--json", "cache", "info")
    assert code == 0 and json.loads(out)["root"] == str(root)
    code, _, err = run(capsys, "cache", "clear", "--nvrtc", "--debug", "--no-color")
    assert code == 0 and err.startswith("removed ")
