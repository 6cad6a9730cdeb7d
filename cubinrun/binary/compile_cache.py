"""Compiled cubins kept on disk, keyed by everything that made them.

NVRTC, nvJitLink and nvcc builds share one format: `<key>.cubin` and
`<key>.json` (the compiler's log, the lowered names, the arch and the cubin's
SHA-256) in a folder per tool under the cache root (`nvrtc/`, `nvjitlink/`,
`nvcc/`), read and written through cache/trust.py's checks. A key is the SHA-256 of
the source bytes and of every input its caller names (options, include
folders, the headers' digest, the compiler's version, the arch).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..cache import trust
from ..cache.folders import mark_used, prune_now_and_then, write_atomically


@dataclass(frozen=True)
class CompiledCuda:
    cubin: bytes
    log: str                        # the compiler's log (warnings), "" when silent
    lowered_names: dict[str, str]   # name expression -> mangled symbol
    arch: str


@dataclass(frozen=True)
class CachedCompile:
    compiled: CompiledCuda
    hit: bool
    path: Path | None   # the cached cubin, for loaders and `inspect`; None: not cached


_CACHE_FORMAT = 2     # 2: the JSON holds the cubin's SHA-256


def entry_key(source: bytes, **inputs) -> str:
    document = {"format": _CACHE_FORMAT, "source": hashlib.sha256(source).hexdigest(), **inputs}
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def lookup_entry(kind: str, key: str) -> CachedCompile | None:
    """A complete, undamaged entry, or None (absent or damaged: compile again and
    overwrite). The JSON is written last and holds the cubin's SHA-256, so a
    cubin cut short or altered on disk is never taken for the compiler's."""
    from ..limits import MAX_BINARY_BYTES
    folder = trust.folder(kind)
    try:
        meta = json.loads(trust.read(folder / f"{key}.json", MAX_BINARY_BYTES) or b"null")
        cubin = trust.read(folder / f"{key}.cubin", MAX_BINARY_BYTES)
        if cubin is None or not (isinstance(meta, dict) and isinstance(meta.get("log"), str)
                and isinstance(meta.get("arch"), str)
                and isinstance(meta.get("lowered_names"), dict)
                and all(isinstance(k, str) and isinstance(v, str)
                        for k, v in meta["lowered_names"].items())
                and meta.get("sha256") == hashlib.sha256(cubin).hexdigest()):
            return None
        compiled = CompiledCuda(cubin, meta["log"], meta["lowered_names"], meta["arch"])
    except (ValueError, RecursionError):
        return None
    mark_used(folder / f"{key}.json")
    return CachedCompile(compiled, hit=True, path=folder / f"{key}.cubin")


def store_entry(kind: str, key: str, compiled: CompiledCuda) -> CachedCompile:
    """Keep the result; a cache that cannot be written (read-only, a file where
    the folder should be) only costs a compile next time, so the compile's
    result is returned all the same, from no file (`path` None)."""
    meta = {"log": compiled.log, "lowered_names": compiled.lowered_names, "arch": compiled.arch,
            "sha256": hashlib.sha256(compiled.cubin).hexdigest()}
    folder = trust.folder(kind, create=True)
    try:
        write_atomically(folder / f"{key}.cubin", compiled.cubin)
        write_atomically(folder / f"{key}.json", json.dumps(meta, indent=1).encode())
    except OSError:
        return CachedCompile(compiled, hit=False, path=None)
    prune_now_and_then()
    return CachedCompile(compiled, hit=False, path=folder / f"{key}.cubin")
