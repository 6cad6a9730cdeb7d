"""What a cubinrun worker process calls first in the multi-run tests
(`cubinrun.runs.executor.WORKER_SETUP = "fakecuda.worker:install"`): a spawned
process does not inherit the test's monkeypatching, so it puts the fake
device in place of the driver itself. The fake libcuda comes through
$CUBINRUN_LIBCUDA as for any launcher; faults through $FAKECUDA_STICKY and
$FAKECUDA_CRASH (comma-separated kernel names) and $FAKECUDA_STICKY_MARKER."""
from __future__ import annotations

import os
from pathlib import Path

from cubinrun.gpu import driver

from . import FakeDriver
from .device import FakeDevice


def install() -> None:
    libcuda = FakeDriver(Path(os.environ["CUBINRUN_LIBCUDA"]))
    device = FakeDevice(lambda: libcuda.launch_count, libcuda)
    device.sticky_kernels = set(filter(None, os.environ.get("FAKECUDA_STICKY", "").split(",")))
    device.crash_kernels = set(filter(None, os.environ.get("FAKECUDA_CRASH", "").split(",")))
    device.sticky_marker = os.environ.get("FAKECUDA_STICKY_MARKER", "").encode()
    driver.call = device
    # the fake runs none of cubinrun's own kernels: data made and checked on the host
    # (this process's environment only)
    os.environ.setdefault("CUBINRUN_DATA", "host")
