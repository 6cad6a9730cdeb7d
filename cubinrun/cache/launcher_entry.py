"""A launcher's cache entry: the module file, named by its content's digest,
and a small ref file beside it that names that file with its size and sha256.

A cached launcher is imported only after its size and digest match the ref:
a library with damaged bytes can crash the process that loads it (SIGSEGV,
SIGBUS), and would do so on every later run. The check is the same for an ELF
.so and a PE .pyd; it reads the file (tens of KB) and hashes it, once per
process. Nothing here needs to replace or delete a file that may be loaded (a
loaded .pyd is locked on Windows): a damaged file that cannot be removed is
left for pruning, and the rebuilt one takes another name.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .folders import write_atomically

REF_SUFFIX = ".ref"
_MAX_NAMES = 16         # names tried for one digest when earlier ones are locked
_MAX_REF_BYTES = 512    # a ref is one short line; a damaged one is not read whole


def ref_path(prefix: Path) -> Path:
    """`prefix` is the entry's path without suffixes: launchers/<module>.<key>."""
    return prefix.with_name(prefix.name + REF_SUFFIX)


def verified_module(prefix: Path) -> Path | None:
    """The entry's module file when the ref names one whose size and digest
    match; None when there is no entry or it is damaged (its file removed)."""
    try:
        with open(ref_path(prefix), "rb") as f:
            digest, size, name = f.read(_MAX_REF_BYTES).decode("ascii").split()
        size = int(size)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not name.startswith(prefix.name + ".") or Path(name).name != name:
        return None                         # not a file of this entry
    path = prefix.with_name(name)
    if _holds(path, size, digest):
        return path
    _remove(path)
    return None


def store(prefix: Path, built: Path, suffix: str) -> Path:
    """Move a module file just compiled into the entry, then point the ref at it."""
    data = built.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    for attempt in range(_MAX_NAMES):
        name = f"{prefix.name}.{digest[:16]}{f'-{attempt}' if attempt else ''}{suffix}"
        target = prefix.with_name(name)
        if _holds(target, len(data), digest):
            built.unlink()                  # the same bytes are there (another process)
            break
        try:
            os.replace(built, target)
            break
        except PermissionError:             # a loaded (or damaged, locked) file: next name
            continue
    else:
        raise PermissionError(f"no usable name for launcher {prefix.name}: "
                              f"{_MAX_NAMES} files of that name are locked")
    write_atomically(ref_path(prefix), f"{digest} {len(data)} {name}\n".encode("ascii"))
    return target


def _holds(path: Path, size: int, digest: str) -> bool:
    try:
        with open(path, "rb") as f:
            data = f.read(size + 1)         # bounded: a file grown past size fails anyway
    except OSError:
        return False
    return len(data) == size and hashlib.sha256(data).hexdigest() == digest


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass                                # locked or gone: the rebuild takes another name
