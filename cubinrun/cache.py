"""Where cubinrun keeps what it builds: launchers, NVRTC and nvJitLink cubins,
parsed cubin facts; and how a cache file is written."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cache_root() -> Path:
    """$CUBINRUN_CACHE_DIR, else $XDG_CACHE_HOME/cubinrun, else ~/.cache/cubinrun."""
    if explicit := os.environ.get("CUBINRUN_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or _home() / ".cache"
    return Path(base) / "cubinrun"


def _home() -> Path:
    try:
        return Path.home()
    except RuntimeError:            # no $HOME and no passwd entry: a container's user
        return Path(tempfile.gettempdir())


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
