"""Data that never leaves the GPU: inputs drawn and outputs checked on the device
(hostdata/device_draws.py and device_check_source.py say what can and why).

The sources are compiled with NVRTC once per source and device arch and cached
like any `source:` kernel (binary/nvrtc.py: `nvrtc/` in the cache), without
fused multiply-add, so the device rounds as NumPy does; the loaded modules are
kept for the session (pipeline/session.py), whose context they live in. `CUBINRUN_DATA=host` forces the host path (the bench
compares both in one run; a user can rule the device out): inputs made on the
host and uploaded, outputs downloaded and checked there. A source NVRTC cannot
compile (no NVRTC wheel) also leaves everything on the host.
"""
from __future__ import annotations

import ctypes
import math
import os
from typing import Mapping

import numpy as np

from . import driver
from ..errors import BuildError, UsageError
from ..hostdata.device_draws import (INT_SEGMENT, KEEP, SEGMENT, DeviceDraw, Segments,
                                     draws_source, integer_layout, stitch)

THREADS = 256
MAX_BLOCKS = 4096
_MODES = {"bits": 0, "close": 1, "equal": 2}
_U64 = ctypes.c_uint64
_EVERYTHING = (1 << 64) - 1
_modules: dict[tuple[str, str], object] = {}


def enabled() -> bool:
    """False when CUBINRUN_DATA=host asks for the host path (`device`, or unset,
    is the default); any other value is a usage error, not silently the default."""
    value = os.environ.get("CUBINRUN_DATA", "").strip().lower()
    if value not in ("", "device", "host"):
        raise UsageError(f"CUBINRUN_DATA={os.environ['CUBINRUN_DATA'][:40]!r}: "
                         "expected device or host")
    return value != "host"


def drawn_on_device(buffer, index: int, values=None) -> bool:
    """Whether the device draws this input (so the host need not make it ahead)."""
    from ..hostdata.device_draws import device_draw
    return enabled() and isinstance(device_draw(buffer, index, values), DeviceDraw)


def _function(source: str, name: str, kernel: str):
    """A kernel of `source`, compiled for the current device (cached on disk) and
    loaded once per process; None when NVRTC cannot build it."""
    from ..binary.nvrtc import arch_for_capability, cached_compile
    for thread in _nvrtc_ahead:
        thread.join()               # one import of NVRTC at a time
    arch = arch_for_capability(*driver.current_capability())
    key = (source, arch)
    if key not in _modules:
        try:
            built = cached_compile(source, name=name, arch=arch, options=["--fmad=false"])
        except (BuildError, UsageError):     # no NVRTC, or one too old for this device
            _modules[key] = None
        else:
            _modules[key] = (driver.load_module(built.compiled.cubin, what=name), {})
    if _modules[key] is None:
        return None
    module, functions = _modules[key]
    if kernel not in functions:
        functions[kernel] = driver.get_function(module, kernel)
    return functions[kernel]


_nvrtc_ahead: list = []


def load_nvrtc_ahead() -> None:
    """Import cuda-python's NVRTC and load the library on a thread (~0.2 s), once
    per process, while the spec is read and CUDA starts: a warm cache's cubin is
    then a look-up keyed by NVRTC's version. Errors are left for the real call."""
    if _nvrtc_ahead or not enabled():
        return
    import threading

    def load() -> None:
        from ..binary.nvrtc import nvrtc_version
        try:
            nvrtc_version()
        except Exception:           # no NVRTC: _function says so when it is needed
            pass
    thread = threading.Thread(target=load, daemon=True, name="cubinrun-nvrtc")
    _nvrtc_ahead.append(thread)
    thread.start()


def forget_modules() -> None:
    """The session is closing (its context may be reset next, runs/worker.recover):
    the next session loads the modules again (NVRTC's cubins stay cached on disk)."""
    _modules.clear()


def _grid(count: int) -> int:
    return max(1, min(MAX_BLOCKS, -(-count // THREADS)))


def _launch(function, count: int, args: list, stream: int, what: str) -> None:
    driver.launch_kernel(function, _grid(count), THREADS, args, stream, context=what)


# ---------------------------------------------------------------- inputs

def draw(plan: DeviceDraw, pointer: int, stream: int) -> bool:
    """Make the buffer at `pointer` on the device; False (nothing written) when it
    must be made on the host after all (no NVRTC, or a normal the device's exp()
    left in doubt)."""
    source = draws_source()
    kernel = {"uniform": "cr_uniform", "arange": "cr_arange", "fill8": "cr_fill8",
              "normal": "cr_normal_values", "integers": "cr_int_values"}[plan.kind]
    function = _function(source, "cubinrun_device_draws.cu", kernel)
    if function is None:
        return False
    out, n, code = ctypes.c_void_p(pointer), _U64(plan.count), ctypes.c_int(plan.type_code)
    state = [_U64(w) for w in plan.state]
    what = f"{plan.kind} input drawn on the device"
    if plan.kind == "uniform":
        low, span, first = plan.args
        _launch(function, plan.count, [out, n, code, ctypes.c_double(low),
                                       ctypes.c_double(span), *state, _U64(first)], stream, what)
    elif plan.kind == "arange":
        _launch(function, plan.count, [out, n, code, _U64(plan.args[0])], stream, what)
    elif plan.kind == "fill8":
        _launch(function, plan.count, [out, n, _U64(plan.args[0])], stream, what)
    elif plan.kind == "integers":
        _integers(plan, function, _function(source, "cubinrun_device_draws.cu",
                                            "cr_int_counts"), out, stream)
    else:
        return _normal(plan, function, _function(source, "cubinrun_device_draws.cu",
                                                 "cr_normal_segments"), out, stream)
    return True


def _integers(plan: DeviceDraw, values_fn, counts_fn, out, stream: int) -> None:
    unit, mode, off, rng_excl, threshold = plan.args
    state = [_U64(w) for w in plan.state]
    scratch: list[int] = []
    try:
        def run(segments: int) -> np.ndarray:
            counts = driver.alloc(4 * segments)
            scratch.append(counts)
            _launch(counts_fn, segments, [_U64(segments), _U64(INT_SEGMENT), ctypes.c_int(unit),
                                          _U64(rng_excl), _U64(threshold), *state,
                                          ctypes.c_void_p(counts)], stream,
                    "random integers: counts")
            driver.stream_synchronize(stream, context="random integers: counts")
            return np.frombuffer(driver.copy_to_host_bytes(counts, 4 * segments), np.uint32)
        offsets = integer_layout(plan.count, unit, threshold, run)
        if offsets is None:
            segments, where = -(-plan.count // INT_SEGMENT), 0
        else:
            segments = len(offsets) - 1
            where = driver.alloc(offsets.nbytes)
            scratch.append(where)
            driver.copy_to_device_async(where, offsets.ctypes.data, offsets.nbytes, stream)
        _launch(values_fn, segments,
                [out, _U64(plan.count), ctypes.c_int(plan.type_code), ctypes.c_int(unit),
                 ctypes.c_int(mode), _U64(off), _U64(rng_excl), _U64(threshold),
                 _U64(segments), _U64(INT_SEGMENT), ctypes.c_void_p(where), *state], stream,
                "random integers: values")
        driver.stream_synchronize(stream, context="random integers: values")
    finally:
        for pointer in scratch:
            driver.free_quietly(pointer)


def _normal(plan: DeviceDraw, values_fn, segments_fn, out, stream: int) -> bool:
    state = [_U64(w) for w in plan.state]
    scratch: list[int] = []

    def device_array(nbytes: int, zeroed: bool = False) -> int:
        scratch.append(driver.alloc(nbytes))
        if zeroed:                      # on the stream the kernels run on: ordered before them
            driver.memset_async(scratch[-1], 0, nbytes, stream)
        return scratch[-1]

    def run(segments: int, first: int, start: int | None) -> Segments:
        counts, exits = device_array(4 * segments), device_array(8 * segments)
        kept, unsure = device_array(2 * KEEP * segments), device_array(8, zeroed=True)
        _launch(segments_fn, segments,
                [_U64(segments), _U64(first), _U64(SEGMENT),
                 _U64(_EVERYTHING if start is None else start), *state,
                 ctypes.c_void_p(counts), ctypes.c_void_p(exits), ctypes.c_void_p(kept),
                 ctypes.c_void_p(unsure)], stream, "normal input: segments")
        driver.stream_synchronize(stream, context="normal input: segments")
        got = [np.frombuffer(driver.copy_to_host_bytes(p, size), dtype=t)
               for p, size, t in ((counts, 4 * segments, np.uint32), (exits, 8 * segments,
                                                                       np.uint64),
                                  (kept, 2 * KEEP * segments, np.uint16), (unsure, 4, np.uint32))]
        return Segments(got[0], got[1], got[2].reshape(segments, KEEP), int(got[3][0]))
    try:
        layout = stitch(plan.count, run)
        if layout.unsure:
            return False
        starts, offsets = device_array(layout.starts.nbytes), device_array(layout.offsets.nbytes)
        # on the kernels' stream (a non-blocking one: a plain copy would not be ordered
        # with them); the arrays live until the synchronize below
        driver.copy_to_device_async(starts, layout.starts.ctypes.data, layout.starts.nbytes,
                                    stream)
        driver.copy_to_device_async(offsets, layout.offsets.ctypes.data, layout.offsets.nbytes,
                                    stream)
        unsure = device_array(8, zeroed=True)
        lo, hi = plan.clip or (0.0, 0.0)
        _launch(values_fn, len(layout.starts),
                [out, _U64(plan.count), ctypes.c_int(plan.type_code), ctypes.c_double(plan.loc),
                 ctypes.c_double(plan.scale), ctypes.c_int(plan.clip is not None),
                 ctypes.c_double(lo), ctypes.c_double(hi), _U64(len(layout.starts)),
                 ctypes.c_void_p(starts), ctypes.c_void_p(offsets), *state,
                 ctypes.c_void_p(unsure)], stream, "normal input: values")
        driver.stream_synchronize(stream, context="normal input: values")
        return not np.frombuffer(driver.copy_to_host_bytes(unsure, 4), np.uint32)[0]
    finally:
        for pointer in scratch:
            driver.free_quietly(pointer)


# ---------------------------------------------------------------- checks

class Shape8(ctypes.Structure):
    """device_check.cu's Shape8, passed by value: 8 dims or strides."""
    _fields_ = [("d", ctypes.c_uint64 * 8)]


def check_arguments(dc) -> tuple[list, list]:
    """The check kernels' parameters after the inputs, as ctypes values: its
    scalars (double, i64, Shape8) and the rule (mode, wrap, rtol, atol, nan_ok)."""
    kinds = {"d": ctypes.c_double, "i": ctypes.c_int64,
             "s": lambda dims: Shape8((ctypes.c_uint64 * 8)(*dims))}
    scalars = [kinds[t](v) for t, v in dc.scalars]
    rule = [ctypes.c_int(_MODES[dc.mode]), ctypes.c_int(int(dc.wrap)), ctypes.c_double(dc.rtol),
            ctypes.c_double(dc.atol), ctypes.c_int(int(dc.nan_ok))]
    return scalars, rule


def checks_on_device(spec) -> dict:
    """The spec's checks the device can run: DeviceCheck by check name."""
    from ..hostdata.device_check_source import DeviceCheck, device_check
    env = spec.expression_env()
    found = {}
    for check in spec.checks:
        dc = device_check(check, spec.buffers.get(check.output), spec.buffers, env,
                          frozenset(spec.globals))
        if isinstance(dc, DeviceCheck):
            found[check.name] = dc
    return found


def digest(pointer: int, nbytes: int, stream: int) -> int | None:
    """cr_digest of device memory (None without NVRTC)."""
    function = _function(draws_source(), "cubinrun_device_draws.cu", "cr_digest")
    if function is None:
        return None
    word = driver.alloc(8)
    try:
        driver.memset_async(word, 0, 8, stream)
        _launch(function, -(-nbytes // 8), [ctypes.c_void_p(pointer), _U64(nbytes),
                                             ctypes.c_void_p(word)], stream, "input digest")
        driver.stream_synchronize(stream, context="input digest")
        return int(np.frombuffer(driver.copy_to_host_bytes(word, 8), np.uint64)[0])
    finally:
        driver.free_quietly(word)


def input_digests(spec, memory) -> dict[str, int]:
    """Digests of the buffers the device's checks will read, as uploaded."""
    if not enabled():
        return {}
    names = {name for dc in checks_on_device(spec).values() for name in dc.inputs}
    found = {}
    for name in sorted(names):
        buffer = memory.buffers[name]
        value = digest(buffer.pointer, buffer.spec.nbytes, memory.staging.stream)
        if value is not None:
            found[name] = value
    return found


def run_check(dc, check, output, pointers: Mapping[str, int], stream: int):
    """A DeviceCheck run on the output at pointers[output.name], its inputs'
    buffers at theirs: the CheckResult, or None when NVRTC cannot build it."""
    from ..hostdata.device_check_source import SHOW_WORDS, run_device_check
    check_fn = _function(dc.source, "cubinrun_device_check.cu", "cr_check")
    show_fn = _function(dc.source, "cubinrun_device_check.cu", "cr_check_show")
    if check_fn is None or show_fn is None:
        return None
    inputs = [ctypes.c_void_p(pointers[name]) for name in dc.inputs]
    scalars, rule = check_arguments(dc)
    out, n = ctypes.c_void_p(pointers[output.name]), math.prod(output.shape)
    words = driver.alloc(8 * (5 + SHOW_WORDS * 8 + 8))
    try:
        def launch_check(after: int) -> np.ndarray:
            start = np.array([0, 0, 0, 0, _EVERYTHING], dtype=np.uint64)
            driver.copy_to_device_async(words, start.ctypes.data, start.nbytes, stream)
            _launch(check_fn, n, [*inputs, *scalars, out, _U64(n), _U64(after), *rule,
                                  ctypes.c_void_p(words)], stream, f"check {check.name}")
            driver.stream_synchronize(stream, context=f"check {check.name}")
            return np.frombuffer(driver.copy_to_host_bytes(words, 40), np.uint64)

        def launch_show(indices: list[int]) -> np.ndarray:
            at = words + 40
            shown = at + 64
            wanted = np.array(indices, dtype=np.uint64)
            driver.copy_to_device_async(at, wanted.ctypes.data, wanted.nbytes, stream)
            _launch(show_fn, len(indices), [*inputs, *scalars, out, ctypes.c_void_p(at),
                                            _U64(len(indices)), *rule, ctypes.c_void_p(shown)],
                    stream, f"check {check.name}")
            driver.stream_synchronize(stream, context=f"check {check.name}")
            return np.frombuffer(driver.copy_to_host_bytes(shown, 8 * SHOW_WORDS * len(indices)),
                                 np.uint64)
        return run_device_check(dc, check, output, launch_check, launch_show)
    finally:
        driver.free_quietly(words)


# ---------------------------------------------------------------- whole references kept on the device

class KeptReference:
    """The last whole reference uploaded, kept for the next run of a session (a
    sweep's or tune's points share one while their inputs do, refcache.py): the
    refcache entry it came from (held, so its identity and its array's address
    stay its own), the array's address, shape and dtype, and the device copy.
    `close()` frees it with the session."""

    ROOM = 256 << 20                # device memory left free beside it

    def __init__(self):
        self._kept: tuple | None = None

    def pointer(self, made, array: np.ndarray) -> int | None:
        """The device copy of `array` (made by `made`), uploaded unless kept; None
        when it would not leave ROOM of the device's free memory."""
        key = (array.ctypes.data, array.shape, array.dtype.str)    # each run views it anew
        if self._kept is not None and self._kept[0] is made and self._kept[1] == key:
            return self._kept[2]
        self.close()
        free, _ = driver.memory_info()
        if array.nbytes + self.ROOM > free:
            return None
        pointer = driver.alloc(array.nbytes)
        try:
            driver.copy_to_device(pointer, array)
        except BaseException:
            driver.free_quietly(pointer)
            raise
        self._kept = (made, key, pointer)       # `made` holds the array: its address stays
        return pointer

    def close(self) -> None:
        if self._kept is not None:
            driver.free_quietly(self._kept[2])
            self._kept = None


def compare_with_reference(dc, checker, output, pointers: Mapping[str, int], stream: int,
                           kept: KeptReference):
    """The CheckResult of comparing the output with the host's whole reference on
    the device (device_check_source.reference_check), or None when it does not
    fit the device's free memory or NVRTC cannot build the kernel."""
    reference = checker._reference
    pointer = kept.pointer(reference._made, reference.array)
    if pointer is None:
        return None
    return run_check(dc, checker.check, output, {**pointers, "reference": pointer}, stream)
