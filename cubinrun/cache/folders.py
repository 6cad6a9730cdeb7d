"""Where cubinrun keeps what it builds: launchers, NVRTC and nvJitLink cubins,
parsed cubin facts; and how a cache file is written."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..platform import WINDOWS


def cache_root() -> Path:
    """$CUBINRUN_CACHE_DIR, else on Windows %LOCALAPPDATA%\\cubinrun, else
    $XDG_CACHE_HOME/cubinrun, else ~/.cache/cubinrun, else (no home at all)
    <tempdir>/cubinrun-<uid>. trust.py decides whether it may be used."""
    if explicit := os.environ.get("CUBINRUN_CACHE_DIR"):
        return Path(explicit)
    if WINDOWS:
        # Local, not Roaming: launchers are built for this machine's compiler.
        local = os.environ.get("LOCALAPPDATA", "")
        if not os.path.isabs(local):
            local = (_home() or Path(tempfile.gettempdir())) / "AppData" / "Local"
        return Path(local) / "cubinrun"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG Base Directory spec: a relative path is invalid and is ignored.
    if os.path.isabs(xdg):
        return Path(xdg) / "cubinrun"
    home = _home()
    if home is None:
        # No $HOME and no passwd entry (a container's arbitrary uid): a folder of
        # this uid's own, never a name any local user could create first.
        return Path(tempfile.gettempdir()) / f"cubinrun-{os.geteuid()}"
    return home / ".cache" / "cubinrun"


def _home() -> Path | None:
    try:
        return Path.home()
    except (RuntimeError, KeyError):     # no $HOME and no passwd entry
        return None


def write_atomically(path: Path, data: bytes) -> None:
    """Readers see the old file or the whole new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# --- use and pruning (entries.py lists, clears and prunes) -------------
# An entry not used for PRUNE_UNUSED_DAYS is removed, at most once a day, by
# the next command that writes to the cache: a compile is already slow, and a
# command that only hits the cache never pays for a scan.
PRUNE_UNUSED_DAYS = 30
PRUNE_EVERY_S = 24 * 3600
PRUNE_STAMP = ".last-prune"


def mark_used(path: Path) -> None:
    """Record a hit on a cache entry in its access time, at most once a day.
    Pruning goes by the last use, and file systems mounted noatime or relatime
    do not keep access times well enough by themselves."""
    import time
    try:
        st = os.stat(path)
        now = time.time()
        if now - max(st.st_atime, st.st_mtime) > PRUNE_EVERY_S:
            os.utime(path, (now, st.st_mtime))
    except OSError:
        pass                        # a read-only cache still works


def prune_now_and_then() -> None:
    """After a write to the cache: once a day at most, remove the entries not
    used for PRUNE_UNUSED_DAYS. One stat when it is not due; never an error."""
    import time
    root = cache_root()
    stamp = root / PRUNE_STAMP
    try:
        if time.time() - stamp.stat().st_mtime < PRUNE_EVERY_S:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        stamp.touch()
        from .entries import prune
        prune(root, PRUNE_UNUSED_DAYS * 24 * 3600)
    except OSError:
        pass
