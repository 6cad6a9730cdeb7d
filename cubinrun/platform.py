"""Whether cubinrun runs on Windows, decided in one place.

What differs there: the driver's name and how it is loaded (gpu/driver.py),
the cache folder (cache/folders.py), a launcher's file name and its compilers
(launcher/), how a compiler's process tree is ended (launcher/tool_runs.py)
how free host memory is read (gpu/capacity.py), whether the cache's owners and
modes are checked (cache/trust.py) and whether SIGTERM is forwarded to workers
(runs/executor.py).
"""
from __future__ import annotations

import sys

WINDOWS = sys.platform == "win32"
