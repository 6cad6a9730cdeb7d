"""The fake libcuda (fake_libcuda.c): build it, point launchers at it, read what it recorded.

A launcher module resolves the driver once, at its first launch, from
$CUBINRUN_LIBCUDA; `fake_driver_env` sets that (and a private launcher cache)
for the duration of a test module.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from cubinrun.launcher.build import find_compiler, find_cuda_include

SOURCE = Path(__file__).with_name("fake_libcuda.c")

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701

_MAX_LAUNCHES, _MAX_ATTRS, _MAX_PARAMS, _MAX_PARAM_BYTES = 64, 8, 64, 4096


class _FakeLaunch(ctypes.Structure):
    _fields_ = [
        ("function", ctypes.c_uint64),
        ("stream", ctypes.c_uint64),
        ("grid", ctypes.c_uint32 * 3),
        ("block", ctypes.c_uint32 * 3),
        ("shared", ctypes.c_uint32),
        ("num_attrs", ctypes.c_uint32),
        ("attr_id", ctypes.c_uint32 * _MAX_ATTRS),
        ("attr_value", (ctypes.c_uint8 * 16) * _MAX_ATTRS),
        ("num_params", ctypes.c_uint32),
        ("param_offset", ctypes.c_uint32 * _MAX_PARAMS),
        ("param_address_mod64", ctypes.c_uint32 * _MAX_PARAMS),
        ("param_bytes", ctypes.c_uint8 * _MAX_PARAM_BYTES),
    ]


@dataclass(frozen=True)
class Launch:
    """One recorded cuLaunchKernelEx call."""
    function: int
    stream: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    attrs: list[tuple[int, bytes]]      # (CUlaunchAttributeID, first 16 bytes of the value)
    params: list[bytes]
    param_alignment: list[int]          # address of each parameter's storage mod 64


class FakeDriver:
    def __init__(self, path: Path):
        self.path = path
        self._lib = ctypes.CDLL(str(path))
        self._lib.fake_launch.restype = ctypes.POINTER(_FakeLaunch)
        self._lib.fake_add_pointer_rule.argtypes = [
            ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int, ctypes.c_int64]
        self.reset()

    def reset(self) -> None:
        self._lib.fake_reset()
        self._sizes: list[int] = []

    def set_param_sizes(self, sizes: Sequence[int]) -> None:
        """The size of each parameter the launcher passes, scratch pointers included."""
        array = (ctypes.c_uint32 * len(sizes))(*sizes)
        assert self._lib.fake_set_param_sizes(len(sizes), array) == 0
        self._sizes = list(sizes)

    def add_pointer_rule(self, lo: int, hi: int, result: int = CUDA_ERROR_INVALID_VALUE,
                         delta: int = 0) -> None:
        """cuPointerGetAttribute on [lo, hi) answers `result`, or address + delta on success."""
        assert self._lib.fake_add_pointer_rule(lo, hi, result, delta) == 0

    def set_clocks(self, mhz: Sequence[float]) -> None:
        """The SM clocks successive clock probes (timing.py) report, cycled."""
        array = (ctypes.c_double * len(mhz))(*mhz)
        assert self._lib.fake_set_clocks(len(mhz), array) == 0

    @property
    def graphs_live(self) -> int:
        """Graphs and executable graphs made and not destroyed."""
        return self._lib.fake_graphs_live()

    @property
    def capturing(self) -> bool:
        return bool(self._lib.fake_capturing())

    # The graph entry points, called by the fake device in place of cuda.bindings'
    # (by the names cuda.h gives them: cuStreamBeginCapture_v2, ...WithFlags).
    def begin_capture(self, stream: int, mode: int) -> int:
        return self._lib.cuStreamBeginCapture_v2(ctypes.c_void_p(stream), mode)

    def end_capture(self, stream: int) -> tuple[int, int]:
        graph = ctypes.c_void_p()
        return self._lib.cuStreamEndCapture(ctypes.c_void_p(stream), ctypes.byref(graph)), \
            graph.value

    def instantiate(self, graph: int) -> tuple[int, int]:
        graph_exec = ctypes.c_void_p()
        return self._lib.cuGraphInstantiateWithFlags(
            ctypes.byref(graph_exec), ctypes.c_void_p(graph), ctypes.c_ulonglong(0)), \
            graph_exec.value

    def launch_graph(self, graph_exec: int, stream: int) -> int:
        return self._lib.cuGraphLaunch(ctypes.c_void_p(graph_exec), ctypes.c_void_p(stream))

    def destroy(self, name: str, handle: int) -> int:
        """cuGraphDestroy or cuGraphExecDestroy."""
        return getattr(self._lib, name)(ctypes.c_void_p(handle))

    def fail_launch(self, result: int, after: int = 0) -> None:
        """After `after` more successful launches, the next returns `result` (once)."""
        self._lib.fake_fail_launch(after, result)

    @property
    def pointer_calls(self) -> int:
        return self._lib.fake_pointer_calls()

    @property
    def launch_count(self) -> int:
        """Successful launches, also those past the ones recorded in full."""
        return self._lib.fake_launch_count()

    def launches(self) -> list[Launch]:
        return [self._read(i) for i in range(min(self.launch_count, _MAX_LAUNCHES))]

    def _read(self, i: int) -> Launch:
        return _launch_of(self._lib.fake_launch(i).contents, self._sizes)


def recorded_launches(path: Path, sizes: Sequence[int]) -> list[Launch]:
    """The launches another process made against the fake ($FAKECUDA_RECORD)."""
    data = path.read_bytes() if path.exists() else b""
    size = ctypes.sizeof(_FakeLaunch)
    return [_launch_of(_FakeLaunch.from_buffer_copy(data, offset), list(sizes))
            for offset in range(0, len(data) - size + 1, size)]


def recorded_allocations(path: Path) -> list[tuple[int, int]]:
    """(address, bytes) of each allocation another process made ($FAKECUDA_ALLOCATIONS)."""
    lines = path.read_text().split("\n") if path.exists() else []
    return [(int(a), int(n)) for a, n in (line.split() for line in lines if line)]


def _launch_of(raw: _FakeLaunch, sizes: list[int]) -> Launch:
    data = bytes(raw.param_bytes)
    params = [data[raw.param_offset[j]:raw.param_offset[j] + sizes[j]]
              for j in range(raw.num_params)]
    return Launch(
        function=raw.function, stream=raw.stream, grid=tuple(raw.grid),
        block=tuple(raw.block), shared=raw.shared,
        attrs=[(raw.attr_id[a], bytes(raw.attr_value[a])) for a in range(raw.num_attrs)],
        params=params, param_alignment=list(raw.param_address_mod64[:raw.num_params]))


def build_fake_driver(folder: Path) -> FakeDriver:
    """Compile fake_libcuda.c into `folder` and load it (tests want `shared_fake_driver`)."""
    # Not nvcuda.dll on Windows: cuda.bindings would take a loaded module of that name.
    path = folder / ("fake_cuda.dll" if sys.platform == "win32" else "libcuda_fake.so")
    with tempfile.TemporaryDirectory() as workdir:
        command = find_compiler().shared_library(str(SOURCE), str(path), [find_cuda_include()],
                                                 workdir, optimize="-O1", link_python=False)
        subprocess.run(command, check=True, capture_output=True, cwd=workdir)
    return FakeDriver(path)


_shared: FakeDriver | None = None


def shared_fake_driver(folder: Path) -> FakeDriver:
    """One fake libcuda per process: a launcher module binds the libcuda it opens
    first and keeps it, so a second fake would never see those launches."""
    global _shared
    if _shared is None:
        _shared = build_fake_driver(folder)
    return _shared


@contextmanager
def fake_driver_env(folder: Path) -> Iterator[FakeDriver]:
    """The fake driver, with CUBINRUN_LIBCUDA pointing at it and the launcher cache in
    `folder`. The fake runs none of cubinrun's own device code (gpu/device_data.py),
    so data is made and checked on the host (CUBINRUN_DATA=host) unless a test
    emulates it (tests/test_run_fake_device_data.py)."""
    fake = shared_fake_driver(folder)
    fake.reset()
    saved = {name: os.environ.get(name)
             for name in ("CUBINRUN_LIBCUDA", "CUBINRUN_CACHE_DIR", "CUBINRUN_DATA")}
    os.environ["CUBINRUN_LIBCUDA"] = str(fake.path)
    os.environ["CUBINRUN_CACHE_DIR"] = str(folder / "cache")
    os.environ["CUBINRUN_DATA"] = "host"
    try:
        yield fake
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
