"""The device-data sources (device_draws.cu, the generated check kernels) built
with the host's C++ compiler, so CPU tests run the very code NVRTC compiles
for the GPU. A kernel is a grid-stride loop: `launch(name, threads, *args)`
runs it once per emulated thread (CR_THREAD / CR_THREADS are globals here).
"""
from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

_BUILT: dict[str, "HostModule"] = {}


def compiler() -> str | None:
    return shutil.which("g++") or shutil.which("clang++")


class HostModule:
    def __init__(self, source: str):
        key = hashlib.sha256(source.encode()).hexdigest()[:16]
        folder = Path(tempfile.gettempdir()) / f"cubinrun-hostcxx-{key}"
        folder.mkdir(exist_ok=True)
        library = folder / "module.so"
        if not library.exists():
            src = folder / "module.cpp"
            src.write_text(source)
            scratch = folder / f"module.{id(self)}.so"
            subprocess.run([compiler(), "-x", "c++", "-O2", "-ffp-contract=off", "-fno-fast-math",
                            "-shared", "-fPIC", "-o", str(scratch), str(src)], check=True,
                           capture_output=True, text=True)
            scratch.replace(library)
        self.lib = ctypes.CDLL(str(library))
        self._thread = ctypes.c_uint64.in_dll(self.lib, "cr_host_thread")
        self._threads = ctypes.c_uint64.in_dll(self.lib, "cr_host_threads")

    def launch(self, name: str, threads: int, *args) -> None:
        function = getattr(self.lib, name)
        function.restype = None
        converted = [_arg(a) for a in args]
        self._threads.value = threads
        for t in range(threads):
            self._thread.value = t
            function(*converted)
        self._thread.value, self._threads.value = 0, 1


def _arg(a):
    if isinstance(a, np.ndarray):
        return ctypes.c_void_p(a.ctypes.data)
    if isinstance(a, (ctypes._SimpleCData, ctypes.Structure)):
        return a
    if a is None:
        return ctypes.c_void_p(0)
    if isinstance(a, float):
        return ctypes.c_double(a)
    raise TypeError(f"give {a!r} as a ctypes value or an array")


def build(source: str) -> HostModule:
    if source not in _BUILT:
        _BUILT[source] = HostModule(source)
    return _BUILT[source]


def emulate_device_data(monkeypatch) -> list[str]:
    """gpu/device_data.py's kernels run by their host build in place of NVRTC and
    cuLaunchKernel (for tests on the fake driver); the names launched, in order."""
    from cubinrun.gpu import device_data, driver
    launched: list[str] = []

    def function(source, name, kernel):
        return getattr(build(source).lib, kernel)

    def launch_kernel(function, blocks, threads, args, stream, context=""):
        launched.append(function.__name__)
        function.restype = None
        function(*args)
    monkeypatch.setattr(device_data, "_function", function)
    monkeypatch.setattr(driver, "launch_kernel", launch_kernel)
    return launched


def same_json(a, b) -> bool:
    """Two reports the same as JSON text: 1, 1.0 and true differ there, not in Python."""
    import json
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
