"""Parsed cubin facts kept on disk, keyed by the cubin's bytes and the parser.

Reading a cubin needs pyelftools, whose import alone costs ~35 ms here and
~90 ms on the GPU machine, for every `launch` and `launch --dry-run`. The facts
(CubinInfo, as its JSON) are stored under the SHA-256 of the cubin and of
cubin.py's source, so an edited parser never reads an old entry. A damaged
or unreadable entry is parsed again; a cache that cannot be written is not an
error (the facts are cheap to recompute).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from ..cache import cache_root, write_atomically
from . import cubin
from .cubin import CubinInfo


def _parser_digest() -> bytes:
    return hashlib.sha256(Path(cubin.__file__).read_bytes()).digest()


def read_cubin_cached(data: bytes, path: str | None = None) -> CubinInfo:
    """cubin.read_cubin(data, path), from the cache when this cubin was read before."""
    key = hashlib.sha256(_parser_digest() + data).hexdigest()
    entry = cache_root() / "cubins" / f"{key}.json"
    try:
        info = CubinInfo.from_json(json.loads(entry.read_bytes()))
    except (OSError, ValueError, KeyError, TypeError):
        info = None
    if info is not None:
        return dataclasses.replace(info, path=path)          # the same bytes, maybe elsewhere
    info = cubin.read_cubin(data, path)                      # SpecError for a bad cubin: not kept
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(entry, json.dumps(info.to_json()).encode())
    except OSError:
        pass
    return info
