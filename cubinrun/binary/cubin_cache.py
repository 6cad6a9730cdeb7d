"""Parsed cubin facts kept on disk, keyed by the cubin's bytes and the parser.

Reading a cubin needs pyelftools, whose import alone costs ~35 ms here and
~90 ms on the GPU machine, for every `launch` and `launch --dry-run`. The facts
(CubinInfo, as its JSON) are stored under the SHA-256 of the cubin and of
cubin.py's source, so an edited parser never reads an old entry. A damaged
or unreadable entry is parsed again, and so is one whose JSON does not have
the shape and types of CubinInfo (an entry edited or damaged into other
valid JSON); a cache that cannot be written is not an error (the facts are
cheap to recompute).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path

from ..cache import trust
from ..cache.folders import mark_used, prune_now_and_then, write_atomically
from ..limits import MAX_FACTS_BYTES
from . import cubin
from .cubin import CubinInfo


@functools.lru_cache(maxsize=1)
def _parser_digest() -> bytes:
    """The parser's source digest: it does not change while the process runs."""
    return hashlib.sha256(Path(cubin.__file__).read_bytes()).digest()


def _int(value, nullable: bool = False) -> bool:
    if value is None:
        return nullable
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64


def _text(value, nullable: bool = False) -> bool:
    return (nullable and value is None) or isinstance(value, str)


def _dim3(value) -> bool:
    return value is None or (isinstance(value, list) and len(value) == 3
                             and all(_int(v) for v in value))


def _valid_facts(data) -> bool:
    """Whether `data` has exactly the types CubinInfo.to_json writes."""
    if not (isinstance(data, dict) and _text(data.get("arch")) and _int(data.get("sm"))
            and data.get("variant") in ("", "a", "f") and _int(data.get("abi_version"))
            and _int(data.get("elf_flags")) and _text(data.get("toolkit"), True)
            and _text(data.get("path"), True) and isinstance(data.get("kernels"), list)):
        return False
    for k in data["kernels"]:
        if not (isinstance(k, dict) and _text(k.get("name")) and _text(k.get("demangled"), True)
                and isinstance(k.get("params"), list) and _int(k.get("param_bytes"))
                and _int(k.get("registers"), True) and _int(k.get("shared_static"))
                and _int(k.get("local"), True) and _int(k.get("max_registers"), True)
                and all(_dim3(k.get(key)) for key in ("max_threads", "required_block", "cluster"))
                and all(key in k for key in ("max_threads", "required_block", "cluster"))):
            return False
        fields = ("ordinal", "offset", "size")
        if not all(isinstance(p, dict) and all(_int(p.get(f)) for f in fields)
                   for p in k["params"]):
            return False
    return True


def read_cubin_cached(data: bytes, path: str | None = None) -> CubinInfo:
    """cubin.read_cubin(data, path), from the cache when this cubin was read before."""
    key = hashlib.sha256(_parser_digest() + data).hexdigest()
    entry = trust.folder("cubins") / f"{key}.json"
    try:
        facts = json.loads(trust.read(entry, MAX_FACTS_BYTES) or b"null")
        info = CubinInfo.from_json(facts) if _valid_facts(facts) else None
    except (ValueError, RecursionError):
        info = None
    if info is not None:
        mark_used(entry)
        return dataclasses.replace(info, path=path)          # the same bytes, maybe elsewhere
    info = cubin.read_cubin(data, path)                      # SpecError for a bad cubin: not kept
    try:
        write_atomically(trust.folder("cubins", create=True) / f"{key}.json",
                         json.dumps(info.to_json()).encode())
    except OSError:
        pass
    prune_now_and_then()
    return info
