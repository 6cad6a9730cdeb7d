"""Parsed cubin facts cached on disk: the same facts, and no pyelftools on a hit."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cubinrun.binary import cubin_cache
from cubinrun.binary.cubin import CubinInfo, read_cubin
from cubinrun.errors import SpecError
from support.repo import REPO

CUBINS = REPO / "tests" / "fixtures" / "cubins"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path))
    return tmp_path / "cubins"


@pytest.mark.parametrize("path", sorted(CUBINS.glob("*.cubin")), ids=lambda p: p.name)
def test_a_cached_read_gives_the_facts_a_parse_gives(cache, path):
    data = path.read_bytes()
    parsed = read_cubin(data, str(path))
    assert cubin_cache.read_cubin_cached(data, str(path)) == parsed      # miss: parsed, kept
    assert len(list(cache.iterdir())) == 1
    assert cubin_cache.read_cubin_cached(data, str(path)) == parsed      # hit: from the JSON
    assert CubinInfo.from_json(parsed.to_json()) == parsed


def test_a_hit_names_the_path_it_was_read_from(cache):
    data = (CUBINS / "params.sm_90.cubin").read_bytes()
    cubin_cache.read_cubin_cached(data, "first/place.cubin")
    assert cubin_cache.read_cubin_cached(data, "second/place.cubin").path == "second/place.cubin"


def test_a_damaged_entry_is_parsed_again(cache):
    data = (CUBINS / "params.sm_90.cubin").read_bytes()
    expected = cubin_cache.read_cubin_cached(data, "p.cubin")
    (entry,) = cache.iterdir()
    entry.write_text('{"arch": "sm_90"')                                 # cut short
    assert cubin_cache.read_cubin_cached(data, "p.cubin") == expected
    assert CubinInfo.from_json(json.loads(entry.read_text())) == expected


def test_a_bad_cubin_is_an_error_and_leaves_no_entry(cache):
    with pytest.raises(SpecError, match="not an ELF file"):
        cubin_cache.read_cubin_cached(b"not a cubin at all", "bad.cubin")
    assert not cache.exists() or not any(cache.iterdir())


def test_an_unwritable_cache_still_reads(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(blocker))
    data = (CUBINS / "params.sm_90.cubin").read_bytes()
    assert cubin_cache.read_cubin_cached(data, "p.cubin") == read_cubin(data, "p.cubin")


def test_a_hit_does_not_import_pyelftools(tmp_path):
    code = ("import sys; from cubinrun.binary.cubin_cache import read_cubin_cached; "
            f"read_cubin_cached(open({str(CUBINS / 'params.sm_90.cubin')!r}, 'rb').read()); "
            "print('elftools' in ' '.join(sys.modules))")
    env = {"CUBINRUN_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.strip() for _ in range(2)]
    assert runs == ["True", "False"]                                     # a miss, then a hit
