"""runs/bundle.Mirror keeps every file it writes inside its root by itself,
whatever its callers normalise (issue 46): paths with many `..`, a link
planted in the mirror, a root named relative to a working directory that a
run then changes."""
from __future__ import annotations

import os

import pytest

from support.platforms import skip_on_windows
from cubinrun.errors import UsageError
from cubinrun.runs.bundle import Mirror


def outside_files(tmp_path) -> list[str]:
    """What lies in tmp_path outside the mirror (the mirror's own folder aside)."""
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
                  if "mirror" not in p.relative_to(tmp_path).parts)


@pytest.mark.parametrize("climb", [1, 2, 10, 200])
def test_paths_with_many_dots_are_refused(tmp_path, climb):
    mirror = Mirror(tmp_path / "mirror")
    target = str(tmp_path / "planted.txt").lstrip("/")
    for path in ("/" + "../" * climb + target,
                 str(tmp_path / "mirror" / "a") + "/.." * climb + "/planted.txt",
                 "../" * climb + target,
                 "/a/b/" + "../" * climb + target):
        with pytest.raises(UsageError):
            mirror.write(path, b"x")
    assert outside_files(tmp_path) == []


def test_a_link_planted_in_the_mirror_is_never_written_through(tmp_path):
    skip_on_windows("symlinks need a privilege on Windows")
    mirror = Mirror(tmp_path / "mirror")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mirror.root.mkdir()
    (mirror.root / "data").symlink_to(elsewhere)            # a folder on the way
    with pytest.raises(UsageError, match="is a link in the worker's private folder"):
        mirror.write("/data/x.npy", b"x")
    victim = tmp_path / "victim"
    victim.write_bytes(b"mine")
    (mirror.root / "file.npy").symlink_to(victim)            # the file itself: replaced
    mirror.write("/file.npy", b"carried")
    assert victim.read_bytes() == b"mine" and os.listdir(elsewhere) == []
    assert (mirror.root / "file.npy").read_bytes() == b"carried"
    assert not (mirror.root / "file.npy").is_symlink()


def test_a_relative_root_stays_put_when_the_working_directory_moves(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mirror = Mirror("mirror")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")                # as run_mirrored does
    carried = tmp_path / "x" / "y.bin"
    mirror.write(str(carried), b"y")
    assert (tmp_path / "mirror" / carried.relative_to(carried.anchor)).read_bytes() == b"y"
    assert os.listdir(tmp_path / "elsewhere") == []


def test_a_plain_path_is_written_whole_and_nothing_else_is_left(tmp_path):
    mirror = Mirror(tmp_path / "mirror")
    ok = tmp_path / "some" / "ok.bin"
    mirror.write(str(ok), b"data")
    mirror.write(str(ok), b"again")
    written = mirror.root / ok.relative_to(ok.anchor)
    assert written.read_bytes() == b"again" and os.listdir(written.parent) == ["ok.bin"]
