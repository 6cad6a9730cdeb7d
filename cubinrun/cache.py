"""Where cubinrun keeps what it builds: launchers, NVRTC and nvJitLink cubins."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$CUBINRUN_CACHE_DIR, else $XDG_CACHE_HOME/cubinrun, else ~/.cache/cubinrun."""
    if explicit := os.environ.get("CUBINRUN_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cubinrun"
