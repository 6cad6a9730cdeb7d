"""Which headers a CUDA source includes, for the NVRTC cache key."""
from __future__ import annotations

from pathlib import Path

from cubinrun.binary.includes import headers_digest, include_dirs_in, local_headers


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_quoted_and_angled_includes_are_followed_and_system_headers_skipped(tmp_path):
    write(tmp_path / "src" / "a.h", '#include "sub/b.h"\n#include <cuda_fp16.h>\n')
    write(tmp_path / "src" / "sub" / "b.h", '#include "c.h"\n')          # beside b.h
    write(tmp_path / "src" / "sub" / "c.h", "")
    write(tmp_path / "inc" / "d.h", "")
    source = b'#include "a.h"\n  #  include <d.h>\n#include <stdint.h>\n'
    found = local_headers(source, tmp_path / "src" / "k.cu", [str(tmp_path / "inc")])
    assert {p.relative_to(tmp_path).as_posix() for p in found} == {
        "src/a.h", "src/sub/b.h", "src/sub/c.h", "inc/d.h"}


def test_an_angled_include_is_not_looked_up_beside_the_includer(tmp_path):
    write(tmp_path / "src" / "x.h", "")
    assert local_headers(b"#include <x.h>\n", tmp_path / "src" / "k.cu", []) == []


def test_cycles_and_missing_headers_end(tmp_path):
    write(tmp_path / "a.h", '#include "b.h"\n#include "gone.h"\n')
    write(tmp_path / "b.h", '#include "a.h"\n')
    found = local_headers(b'#include "a.h"\n', tmp_path / "k.cu", [])
    assert sorted(p.name for p in found) == ["a.h", "b.h"]


def test_the_digest_follows_header_contents(tmp_path):
    header = write(tmp_path / "a.h", "#define X 1\n")
    source, path = b'#include "a.h"\n', tmp_path / "k.cu"
    before = headers_digest(source, path, [])
    assert headers_digest(source, path, []) == before
    header.write_text("#define X 2\n")
    assert headers_digest(source, path, []) != before


def test_include_folders_in_options():
    assert include_dirs_in(["-I", "a", "-Ib", "--include-path=c", "-lineinfo", "-I"]) == [
        "a", "b", "c"]


def test_cuda_headers_come_from_wheels_or_a_toolkit(monkeypatch, tmp_path):
    from cubinrun.binary import includes
    folders = includes.toolkit_include_dirs()
    assert any(Path(f, "cub", "block", "block_reduce.cuh").is_file() for f in folders)   # CCCL
    assert any(Path(f, "cuda_fp16.h").is_file() for f in folders)                        # runtime
    (tmp_path / "include" / "cccl" / "cuda" / "std").mkdir(parents=True)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert includes._toolkit_cccl() == str(tmp_path / "include" / "cccl")
