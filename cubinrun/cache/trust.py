"""Whether the cache may be used: only what this user wrote is trusted.

cubinrun imports launchers (shared libraries: code) from its cache and takes
cubins and cubin facts from it, so anyone who can write a cache folder can run
code as the user. As pip does, a folder from the cache root down is used only
when it is a real folder (not a symlink), owned by this user and writable by
no one else, and a cache file only when it is a regular file with the same
owner and modes, opened without following a link and checked on the open file
(fstat), so what is checked is what is read. The folders above the root must
not be writable by others unless sticky (like /tmp): otherwise anyone could
swap the root between the check and the use.

Anything else is never read: one warning line, and the rest of the run (and
the processes it starts) builds into a private temporary folder, created 0700
by mkdtemp and removed at exit. Results are the same; it costs a compile. A
cache folder that cannot be written costs the same. Windows keeps access in
ACLs, not in owners and mode bits, so there the checks do not apply.
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from ..platform import WINDOWS
from .folders import cache_root

_CHECKED = not WINDOWS             # Windows keeps access in ACLs (see above)


class Untrusted(Exception):
    """A cache folder or file this user did not write alone; its str says why."""


def folder(kind: str, create: bool = False) -> Path:
    """The checked folder of one kind of entry (launchers/, nvrtc/, ...).
    `create` makes the missing folders (0700) and needs them writable; without
    it a missing folder is returned as it is (every lookup there misses).
    An untrusted one is left for the private folder (see the module)."""
    root = cache_root()
    try:
        _check_tree(root, kind, create)
        return root / kind
    except Untrusted as why:
        reason = str(why)
    except OSError as exc:
        if not create:
            return root / kind                # unreadable: every lookup misses
        reason = f"{exc.filename or root} cannot be written ({exc.strerror or exc})"
    private = fall_back(reason) / kind
    if create:
        private.mkdir(mode=0o700, exist_ok=True)
    return private


def read(path: Path, limit: int) -> bytes | None:
    """At most `limit` + 1 bytes of a cache file, or None when it is absent or
    unreadable. A file this user did not write alone is never read: the cache
    is left for the private folder, and the caller's lookup misses."""
    try:
        return read_checked(path, limit)
    except Untrusted as why:
        fall_back(str(why))
        return None


def read_checked(path: Path, limit: int) -> bytes | None:
    """`read`, raising Untrusted instead of leaving the cache."""
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if _CHECKED and os.path.islink(path):
            raise Untrusted(f"{path} is a symlink") from None
        if _CHECKED and isinstance(exc, PermissionError):
            raise Untrusted(f"{path} cannot be read: not this user's") from None
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None                       # a folder or a device: damage, rebuilt
        _check_owner(path, st)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))   # no limit-sized buffer
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def check_all() -> None:
    """Every folder and file of the cache checked now (an lstat each), before
    this process starts workers: they inherit the verdict, so an untrusted
    cache is one warning and one private folder, not one per worker."""
    if not _CHECKED:
        return
    from .entries import KIND_NAMES     # every kind, nvcc/ too (here: only multi-run launches)
    root = cache_root()
    try:
        for kind in KIND_NAMES:
            _check_tree(root, kind, create=False)
            try:
                names = os.listdir(root / kind)
            except FileNotFoundError:
                continue
            for name in names:
                path = root / kind / name
                st = os.lstat(path)
                if stat.S_ISLNK(st.st_mode):
                    raise Untrusted(f"{path} is a symlink")
                _check_owner(path, st)
    except Untrusted as why:
        fall_back(str(why))
    except OSError:
        pass                                    # unreadable: each lookup decides


def fall_back(why: str) -> Path:
    """Leave the cache for a private temporary folder, for this process and
    the ones it starts ($CUBINRUN_CACHE_DIR), with one warning line."""
    import atexit
    import shutil
    import tempfile
    private = Path(tempfile.mkdtemp(prefix="cubinrun-cache-"))
    atexit.register(shutil.rmtree, private, True)
    os.environ["CUBINRUN_CACHE_DIR"] = str(private)
    sys.stderr.write(f"warning: cache not used: {why}; cubinrun trusts only a cache this user "
                     f"alone can write, so this run builds in {private}\n")
    return private


def _check_tree(root: Path, kind: str, create: bool) -> None:
    root = Path(os.path.abspath(root))
    if _CHECKED:
        for parent in root.parents:
            try:
                st = os.stat(parent)
            except FileNotFoundError:
                continue                # made below, by this user
            if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
                raise Untrusted(f"{parent} is writable by others")
    if create:
        root.parent.mkdir(parents=True, exist_ok=True)
    for path in (root, root / kind):
        if create:
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            if create:
                raise
            return
        if stat.S_ISLNK(st.st_mode):
            raise Untrusted(f"{path} is a symlink")
        if not stat.S_ISDIR(st.st_mode):    # on Windows too: only owners and modes are ACLs there
            raise Untrusted(f"{path} is not a folder")
        if _CHECKED:
            _check_owner(path, st)
    if create and not os.access(root / kind, os.W_OK):
        raise PermissionError(13, "read-only", str(root / kind))


def _check_owner(path: Path, st: os.stat_result) -> None:
    if not _CHECKED:
        return
    if st.st_uid != os.geteuid():
        raise Untrusted(f"{path} belongs to uid {st.st_uid}, not this user ({os.geteuid()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Untrusted(f"{path} is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'} "
                        f"(mode {stat.S_IMODE(st.st_mode):o})")
