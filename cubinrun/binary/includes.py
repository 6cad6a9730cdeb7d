"""The local headers a CUDA source includes, so that editing one recompiles.

NVRTC reports no dependencies (it refuses -M and -MD), so cached compiles
would keep a cubin built from an old header. This follows `#include` lines
itself: "quoted" names from the including file's folder, then the include
folders; <angled> names from the include folders only. Whatever is not found
there (CUDA's and the C++ library's headers) belongs to the toolkit, whose
version is already in the cache key. Conditional includes are all followed:
a header that is not really used only costs a needless recompile.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Sequence

from ..errors import SpecError
from ..limits import MAX_HEADERS, MAX_HEADERS_BYTES, MAX_SOURCE_BYTES

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)


def include_dirs_in(options: Sequence[str]) -> list[str]:
    """Folders named by -I DIR, -IDIR and --include-path=DIR in NVRTC options."""
    folders, args = [], iter(options)
    for arg in args:
        if arg == "-I":
            folders.append(next(args, ""))
        elif arg.startswith("--include-path="):
            folders.append(arg.split("=", 1)[1])
        elif arg.startswith("-I"):
            folders.append(arg[2:])
    return [f for f in folders if f]


def local_headers(source: bytes, source_path: Path, folders: Sequence[str]) -> list[Path]:
    """Every header reachable from `source` that lies in its folder or `folders`."""
    return list(_read_headers(source, source_path, folders))


def headers_digest(source: bytes, source_path: Path, folders: Sequence[str]) -> str:
    """SHA-256 over the local headers' paths and contents."""
    digest = hashlib.sha256()
    for header, text in _read_headers(source, source_path, folders).items():
        digest.update(str(header).encode() + b"\0" + text + b"\0")
    return digest.hexdigest()


def _read_headers(source: bytes, source_path: Path, folders: Sequence[str]) -> dict[Path, bytes]:
    """The local headers and their contents, each read once (b"" if unreadable)."""
    from ..files import InputTooLarge, read_bounded
    search = [Path(f) for f in folders]
    found: dict[Path, bytes] = {}
    total = 0
    pending = [(source, source_path.resolve().parent)]
    while pending and len(found) < MAX_HEADERS:
        text, here = pending.pop()
        for quote, name in _INCLUDE.findall(text):
            places = ([here] if quote == b'"' else []) + search
            header = _first_file(name.decode(errors="replace"), places)
            if header is None or header in found:
                continue
            try:
                found[header] = read_bounded(header, MAX_SOURCE_BYTES, "header")
            except InputTooLarge:
                raise
            except SpecError:
                found[header] = b""         # unreadable: NVRTC will say so
                continue
            total += len(found[header])
            if total > MAX_HEADERS_BYTES:
                raise SpecError(f"{source_path}: its local headers hold more than "
                                f"{MAX_HEADERS_BYTES >> 20} MiB")
            pending.append((found[header], header.parent))
    return found


def _first_file(name: str, places: Sequence[Path]) -> Path | None:
    for place in places:
        candidate = place / name
        if candidate.is_file():
            return candidate.resolve()
    return None
