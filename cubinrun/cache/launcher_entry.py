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

from . import trust
from .folders import write_atomically

REF_SUFFIX = ".ref"
_MAX_NAMES = 16         # names tried for one digest when earlier ones are locked
_MAX_REF_BYTES = 512    # a ref is one short line; a damaged one is not read whole


def ref_path(prefix: Path) -> Path:
    """`prefix` is the entry's path without suffixes: launchers/<module>.<key>."""
    return prefix.with_name(prefix.name + REF_SUFFIX)


def verified_module(prefix: Path) -> Path | None:
    """The entry's module file when the ref names one whose size and digest
    match; None when there is no entry or it is damaged (its file removed), or
    when the ref or the module is not this user's alone (trust.py: the
    run leaves the cache, and the file is never imported)."""
    try:
        ref = trust.read(ref_path(prefix), _MAX_REF_BYTES) or b""
        digest, size, name = ref[:_MAX_REF_BYTES].decode("ascii").split()
        size = int(size)
    except (ValueError, UnicodeDecodeError):
        return None
    if not name.startswith(prefix.name + ".") or Path(name).name != name:
        return None                         # not a file of this entry
    path = prefix.with_name(name)
    try:
        if _holds(path, size, digest):
            return path
    except trust.Untrusted as why:
        trust.fall_back(str(why))
        return None
    _remove(path)
    return None


def store(prefix: Path, built: Path, suffix: str) -> Path:
    """Move a module file just compiled into the entry, then point the ref at it."""
    data = built.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    os.chmod(built, 0o600)                  # a linker's 0775 under umask 002 is not trusted
    for attempt in range(_MAX_NAMES):
        name = f"{prefix.name}.{digest[:16]}{f'-{attempt}' if attempt else ''}{suffix}"
        target = prefix.with_name(name)
        try:
            if _holds(target, len(data), digest):
                built.unlink()              # the same bytes are there (another process)
                break
        except trust.Untrusted:
            pass                            # replaced below, never used
        try:
            os.replace(built, target)
            break
        except (PermissionError, IsADirectoryError):
            continue                        # a loaded file (locked) or a folder there: next name
    else:
        raise PermissionError(f"no usable name for launcher {prefix.name}: "
                              f"{_MAX_NAMES} files of that name are locked")
    write_atomically(ref_path(prefix), f"{digest} {len(data)} {name}\n".encode("ascii"))
    return target


def _holds(path: Path, size: int, digest: str) -> bool:
    """Whether `path` has these bytes; Untrusted when it is not this user's alone."""
    data = trust.read_checked(path, size)     # bounded: one grown past size fails
    return data is not None and len(data) == size and hashlib.sha256(data).hexdigest() == digest


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass                                # locked or gone: the rebuild takes another name
