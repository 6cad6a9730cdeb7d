"""The device-data sources, built with the host's C++ compiler (tests/support/hostcxx.py),
against the host's own path: inputs drawn by device_draws.cu are NumPy's stream
bit for bit, and the generated check kernels report what check.py reports
(counts, largest errors, first mismatches) on passing and failing outputs.
The same source is what NVRTC compiles for the GPU (test_gpu_device_data.py)."""
from __future__ import annotations

import ctypes as C
import json
import math

import numpy as np
import pytest

from support import hostcxx
from support.hostcxx import same_json
from cubinrun.dtypes import ELEMENT_TYPES as T
from cubinrun.errors import SpecError
from cubinrun.hostdata import device_draws as dd
from cubinrun.hostdata.check import Checker, run_check
from cubinrun.hostdata.device_check_source import (SHOW_WORDS, STATS_WORDS, DeviceCheck,
                                                   device_check, run_device_check)
from cubinrun.hostdata.device_draws import DeviceDraw, HostOnly, device_draw
from cubinrun.hostdata.values import input_values
from cubinrun.specfile.expr import parse_expr
from cubinrun.specfile.model import BufferArg, Check, Init

pytestmark = pytest.mark.skipif(hostcxx.compiler() is None, reason="no host C++ compiler")
U = C.c_uint64


def buffer(name, dtype, n, init, shape=None):
    return BufferArg(name, T[dtype], shape or (n,), init)


def draw_on_host_cxx(plan: DeviceDraw, threads: int = 1) -> np.ndarray:
    """What gpu/device_data.py has the device make, made by the host build."""
    module = hostcxx.build(dd.draws_source())
    host = {0: np.float64, 1: np.float32, 2: np.uint16, 3: np.uint16, 4: np.int8, 5: np.int16,
            6: np.int32, 7: np.int64, 8: np.uint8, 9: np.uint16, 10: np.uint32, 11: np.uint64,
            12: np.uint8}[plan.type_code]
    out = np.zeros(plan.count, dtype=host)
    n, code, state = U(plan.count), C.c_int(plan.type_code), [U(w) for w in plan.state]
    if plan.kind == "uniform":
        low, span, first = plan.args
        module.launch("cr_uniform", threads, out, n, code, low, span, *state, U(first))
    elif plan.kind == "arange":
        module.launch("cr_arange", threads, out, n, code, U(plan.args[0]))
    elif plan.kind == "fill8":
        module.launch("cr_fill8", threads, out, n, U(plan.args[0]))
    elif plan.kind == "integers":
        unit, mode, off, rng_excl, threshold = plan.args
        rule = [C.c_int(unit), C.c_int(mode), U(off), U(rng_excl), U(threshold)]

        def run(segments):
            counts = np.zeros(segments, np.uint32)
            module.launch("cr_int_counts", threads, U(segments), U(dd.INT_SEGMENT), C.c_int(unit),
                          U(rng_excl), U(threshold), *state, counts)
            return counts
        offsets = dd.integer_layout(plan.count, unit, threshold, run)
        segments = -(-plan.count // dd.INT_SEGMENT) if offsets is None else len(offsets) - 1
        module.launch("cr_int_values", threads, out, n, code, *rule, U(segments),
                      U(dd.INT_SEGMENT), offsets, *state)
    else:
        layout = dd.stitch(plan.count, lambda segments, first, start: _segments(
            module, state, segments, first, start))
        unsure = np.zeros(1, np.uint32)
        lo, hi = plan.clip or (0.0, 0.0)
        module.launch("cr_normal_values", threads, out, n, code, plan.loc, plan.scale,
                      C.c_int(plan.clip is not None), lo, hi, U(len(layout.starts)),
                      layout.starts, layout.offsets, *state, unsure)
        assert layout.unsure == 0 and unsure[0] == 0
    return out


def _segments(module, state, segments, first, start):
    counts = np.zeros(segments, np.uint32)
    exits = np.zeros(segments, np.uint64)
    kept = np.zeros((segments, dd.KEEP), np.uint16)
    unsure = np.zeros(1, np.uint32)
    module.launch("cr_normal_segments", 1, U(segments), U(first), U(dd.SEGMENT),
                  U((1 << 64) - 1 if start is None else start), *state, counts, exits, kept,
                  unsure)
    return dd.Segments(counts, exits, kept, int(unsure[0]))


def same_bits(device: np.ndarray, b: BufferArg, index: int = 0) -> None:
    host = input_values(b, index).whole().reshape(-1)
    assert host.tobytes() == device.tobytes(), \
        np.flatnonzero(host.view(np.uint8) != device.view(np.uint8))[:5]


# ---------------------------------------------------------------- draws

@pytest.mark.parametrize("dtype", ["fp64", "fp32", "fp16", "bf16"])
@pytest.mark.parametrize("seed,index", [(0, 0), (7, 0), (2**63 + 5, 2)])
def test_uniform_is_numpys_stream(dtype, seed, index):
    for init in (Init("random", seed=seed), Init("random", low=-3e4, high=6e4, seed=seed)):
        b = buffer("x", dtype, 20_001, init)
        plan = device_draw(b, index)
        assert isinstance(plan, DeviceDraw) and plan.kind == "uniform"
        same_bits(draw_on_host_cxx(plan, threads=3), b, index)


@pytest.mark.parametrize("dtype,mean,std", [("fp64", 0.0, 1.0), ("fp32", 2.5, 0.25),
                                            ("fp16", -1.0, 3.0), ("bf16", 0.0, 1e-3),
                                            ("i32", 0.0, 100.0), ("i8", 0.0, 20.0),
                                            ("u8", 128.0, 20.0)])
def test_normal_is_numpys_stream_across_segments(dtype, mean, std):
    # 3e5 values: ~75 segments, their seams stitched; ~80 values from the ziggurat's tail
    b = buffer("y", dtype, 300_000, Init("random", distribution="normal", mean=mean, std=std,
                                         seed=11))
    plan = device_draw(b)
    assert isinstance(plan, DeviceDraw) and plan.kind == "normal"
    same_bits(draw_on_host_cxx(plan), b)


def test_normal_clipped_to_a_narrow_type_saturates_as_the_host_does():
    b = buffer("z", "i8", 50_000, Init("random", distribution="normal", mean=0.0, std=21.0,
                                       seed=3))
    plan = device_draw(b)
    assert plan.clip is not None                    # 16 std reach past i8: the host clips too
    same_bits(draw_on_host_cxx(plan), b)


def test_stitching_redraws_a_segment_whose_draw_never_fell_into_step():
    module = hostcxx.build(dd.draws_source())
    state = [U(w) for w in device_draw(buffer("y", "fp64", 10, Init(
        "random", distribution="normal", seed=5))).state]
    calls = []

    def run(segments, first, start):
        calls.append((segments, first, start))
        seg = _segments(module, state, segments, first, start)
        if start is None and first == 0:
            seg.kept[4] = 0xFFFF                    # as if segment 4 kept none of the true starts
        return seg
    layout = dd.stitch(100_000, run)
    assert layout.redrawn == [4] and calls[1] == (1, 4, int(layout.starts[4]))
    out = np.zeros(100_000)
    unsure = np.zeros(1, np.uint32)
    module.launch("cr_normal_values", 1, out, U(100_000), C.c_int(0), 0.0, 1.0, C.c_int(0),
                  0.0, 0.0, U(len(layout.starts)), layout.starts, layout.offsets, *state, unsure)
    from cubinrun.hostdata.pcgstream import Stream
    ref = Stream(5, 0).at(0).standard_normal(100_000)
    assert np.array_equal(out, ref)


@pytest.mark.parametrize("dtype,low,high", [
    ("i32", None, None), ("u8", None, None), ("i1", None, None), ("u1", 1, 2),
    ("i8", -100, 27), ("u8", 0, 256), ("i16", -3, 7), ("u16", 0, 65536), ("i32", -10**9, 10**9),
    ("i32", -2**31, 2**31), ("u32", 5, 6), ("i64", -5, 1000), ("i64", -2**40, 3**30),
    ("u64", 0, 2**64), ("i64", -2**63, 2**63 - 7), ("u64", 2**63, 2**64 - 3)])
def test_random_integers_are_numpys_bounded_integers(dtype, low, high):
    # 8-bit ranges that are not a power of two reject ~1 piece in 50: many seams
    b = buffer("k", dtype, 100_003, Init("random", low=low, high=high, seed=9))
    plan = device_draw(b, 2)
    assert isinstance(plan, DeviceDraw) and plan.kind == "integers"
    same_bits(draw_on_host_cxx(plan, threads=3), b, 2)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "i8", "u16", "i64", "i1"])
def test_arange_and_fills(dtype):
    n = 70_000 if dtype in ("fp32", "i8", "u16", "i64", "i1") else 2048
    b = buffer("a", dtype, n, Init("arange"))
    same_bits(draw_on_host_cxx(device_draw(b), threads=5), b)
    if T[dtype].size == 8:
        f = buffer("f", dtype, 1000, Init("fill", value=-3))
        same_bits(draw_on_host_cxx(device_draw(f)), f)


def test_fp64_fill_is_a_kernel_and_small_fills_stay_memsets():
    f = buffer("f", "fp64", 100, Init("fill", value=0.1))
    plan = device_draw(f)
    assert plan.kind == "fill8"
    same_bits(draw_on_host_cxx(plan), f)
    assert isinstance(device_draw(buffer("g", "fp32", 10, Init("ones"))), HostOnly)


def test_what_stays_on_the_host_and_why(tmp_path):
    np.save(tmp_path / "v.npy", np.zeros(4, np.float32))
    cases = {
        "file": (buffer("x", "fp32", 4, Init("file", path=tmp_path / "v.npy")), "file"),
        "fp8": (buffer("x", "fp8e4nv", 4, Init("random")), "fp8"),
    }
    for name, (b, why) in cases.items():
        found = device_draw(b)
        assert isinstance(found, HostOnly) and why in found.reason, name


def test_bad_inits_keep_their_one_line_errors():
    with pytest.raises(SpecError, match="does not fit"):
        device_draw(buffer("x", "fp16", 4, Init("random", low=0.0, high=1e6)))


def _cpu_has_fma() -> bool:
    try:
        return " fma " in open("/proc/cpuinfo").read().replace("\n", " ")
    except OSError:
        return False


@pytest.mark.skipif(not _cpu_has_fma(), reason="glibc's log1p without FMA rounds 1 in 10**4 apart")
def test_log1p_is_the_host_libm():
    """The ziggurat's tail calls libm's log1p on the host; the device's copy must
    give its bits (checked on 400 000 arguments of every binade the tail uses)."""
    source = dd.draws_source() + """
extern "C" void many_log1p(const double *x, double *y, u64 n) {
    for (u64 i = 0; i < n; i++) y[i] = gl_log1p(x[i]);
}"""
    module = hostcxx.build(source)
    rng = np.random.default_rng(0)
    x = -np.concatenate([rng.random(200_000), rng.random(200_000) * 2.0 ** -rng.integers(
        1, 60, 200_000)])
    y = np.zeros_like(x)
    module.lib.many_log1p(C.c_void_p(x.ctypes.data), C.c_void_p(y.ctypes.data), U(len(x)))
    libm = C.CDLL("libm.so.6")
    libm.log1p.restype, libm.log1p.argtypes = C.c_double, [C.c_double]
    expected = np.array([libm.log1p(v) for v in x[::7]])
    assert np.array_equal(y[::7], expected)


# ---------------------------------------------------------------- checks

def host_cxx_check(dc: DeviceCheck, check: Check, output: BufferArg, out: np.ndarray,
                   arrays: dict, threads: int = 2):
    """run_device_check with the check's kernels built by the host compiler."""
    module = hostcxx.build(dc.source)
    from cubinrun.gpu.device_data import check_arguments
    inputs = [np.ascontiguousarray(arrays[name]).reshape(-1) for name in dc.inputs]
    scalars, rule = check_arguments(dc)
    flat = np.ascontiguousarray(out).reshape(-1)

    def launch_check(after):
        stats = np.array([0, 0, 0, 0, (1 << 64) - 1], dtype=np.uint64)
        module.launch("cr_check", threads, *inputs, *scalars, flat, U(flat.size), U(after),
                      *rule, stats)
        return stats

    def launch_show(indices):
        shown = np.zeros(len(indices) * SHOW_WORDS, np.uint64)
        module.launch("cr_check_show", 1, *inputs, *scalars, flat,
                      np.array(indices, np.uint64), U(len(indices)), *rule, shown)
        return shown
    assert STATS_WORDS == 5
    return run_device_check(dc, check, output, launch_check, launch_show)


def both(expect, out, arrays, out_dtype, in_types, scalars=None, **options):
    check = Check("out", expect=parse_expr(expect, arrays=True), **options)
    output = BufferArg("out", T[out_dtype], out.shape, Init("zeros"))
    buffers = {name: BufferArg(name, T[in_types[name]], a.shape, Init("zeros"))
               for name, a in arrays.items()}
    buffers["out"] = output
    dc = device_check(check, output, buffers, scalars or {})
    assert isinstance(dc, DeviceCheck), dc
    host = run_check(check, out, T[out_dtype], arrays, scalars or {},
                     {n: T[t] for n, t in in_types.items()})
    device = host_cxx_check(dc, check, output, out, arrays)
    return json.loads(json.dumps(host.to_json())), json.loads(json.dumps(device.to_json()))


def _float_case(dtype, n=5000, seed=0):
    rng = np.random.default_rng(seed)
    host = T[dtype].numpy_dtype()
    x = rng.uniform(-1, 1, n).astype(host)
    y = rng.uniform(-1, 1, n).astype(host)
    ref = 2.5 * x.astype(np.float64) + y.astype(np.float64)
    return x, y, ref.astype(host)


@pytest.mark.parametrize("dtype", ["fp32", "fp64", "fp16", "bf16"])
def test_axpy_passing_and_failing_as_the_host_says(dtype):
    x, y, out = _float_case(dtype)
    arrays, types = {"x": x, "y": y}, {"x": dtype, "y": dtype}
    host, device = both("a * x + y", out, arrays, dtype, types, {"a": 2.5})
    assert same_json(host, device) and host["passed"]
    bad = out.copy()
    bad[[3, 17, 4000]] = np.array([5.0, np.nan, np.inf]).astype(bad.dtype)
    bad[100:130] = bad[100:130] * 1.5
    for options in ({}, {"nan_ok": True}, {"rtol": 0.3, "atol": 0.0}, {"exact": True}):
        host, device = both("a * x + y", bad, arrays, dtype, types, {"a": 2.5}, **options)
        assert same_json(host, device) and not host["passed"], options
        assert len(device["first_mismatches"]) == 8


def test_nan_on_both_sides_and_infinities():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, 2.0])
    out = np.array([1.0, np.nan, np.inf, np.inf, -0.0, np.nan])
    for options in ({}, {"nan_ok": True}, {"exact": True}, {"exact": True, "nan_ok": True}):
        host, device = both("x", out, {"x": x}, "fp64", {"x": "fp64"}, **options)
        assert same_json(host, device), options


@pytest.mark.parametrize("expect,out_dtype", [
    ("x + y", "i32"), ("x * y - 7", "i16"), ("x > y", "i1"), ("x - y", "u8"),
    ("where(x > y, x, y)", "i64"), ("max(x, y)", "i32"), ("abs(x - y)", "i32"),
    ("x / y", "fp64"), ("sqrt(abs(x)) + 0.5", "fp32"), ("minimum(x, 3)", "i8"),
])
def test_integer_references_wrap_as_stores_do(expect, out_dtype):
    rng = np.random.default_rng(2)
    x = rng.integers(-2**31, 2**31 - 1, 3000, dtype=np.int32)
    y = rng.integers(1, 2**31 - 1, 3000, dtype=np.int32)
    arrays, types = {"x": x, "y": y}, {"x": "i32", "y": "i32"}
    env = {n: a.astype(np.int64) for n, a in arrays.items()}
    with np.errstate(all="ignore"):
        good = np.asarray(parse_expr(expect, arrays=True).evaluate(env))
    if T[out_dtype].kind == "float":
        good = good.astype(T[out_dtype].numpy_dtype())
    else:
        good = good.astype(T[out_dtype].numpy_dtype())       # wraps as the store does
    host, device = both(expect, good, arrays, out_dtype, types)
    assert same_json(host, device) and host["passed"]
    bad = good.copy()
    bad[::97] = bad[::97] ^ 1 if bad.dtype != bool and bad.dtype.kind != "f" else ~bad[::97] \
        if bad.dtype == bool else bad[::97] + 1
    host, device = both(expect, bad, arrays, out_dtype, types)
    assert same_json(host, device) and not host["passed"]
    host, device = both(expect, bad, arrays, out_dtype, types, rtol=1e-3, atol=0.5)
    assert same_json(host, device)


@pytest.mark.parametrize("x_shape,b_shape,out_shape", [
    ((3, 5), (5,), (3, 5)), ((3, 5), (3, 1), (3, 5)), ((2, 3, 4), (1, 3, 1), (2, 3, 4)),
    ((7,), (), (7,)), ((1, 6), (6,), (1, 6)), ((4, 1, 5), (1, 5), (4, 3, 5)),
])
def test_inputs_that_broadcast_are_read_through_their_strides(x_shape, b_shape, out_shape):
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, x_shape).astype(np.float32)
    b = rng.integers(-9, 9, b_shape).astype(np.int16)
    good = (x.astype(np.float64) * 2 + b).astype(np.float32)
    out = np.broadcast_to(good, out_shape).copy()
    arrays, types = {"x": x, "b": b}, {"x": "fp32", "b": "i16"}
    host, device = both("x * 2 + b", out, arrays, "fp32", types)
    assert same_json(host, device) and host["passed"]
    out.reshape(-1)[::5] += 1
    host, device = both("x * 2 + b", out, arrays, "fp32", types)
    assert same_json(host, device) and not host["passed"]


def test_scalar_parts_are_worked_out_in_python():
    x = np.arange(10, dtype=np.float32)
    host, device = both("x * (N - 1) / 2**3", (x * 9 / 8).astype(np.float32), {"x": x}, "fp32",
                        {"x": "fp32"}, {"N": 10})
    assert same_json(host, device) and host["passed"]


@pytest.mark.parametrize("expect,why", [
    ("x @ y", "whole-array"), ("exp(x)", "NumPy's own"), ("x // 2", "integer rules"),
    ("x < y < 1", "chained"), ("sum(x, axis=0)", "whole-array"),
])
def test_what_checks_stay_on_the_host_and_why(expect, why):
    x = BufferArg("x", T["fp32"], (4, 4), Init("zeros"))
    y = BufferArg("y", T["fp32"], (4, 4), Init("zeros"))
    out = BufferArg("out", T["fp32"], (4, 4), Init("zeros"))
    found = device_check(Check("out", expect=parse_expr(expect, arrays=True)), out,
                         {"x": x, "y": y, "out": out}, {})
    assert isinstance(found, HostOnly) and why in found.reason, found


def test_shapes_that_do_not_broadcast_regions_files_and_globals_stay_on_the_host(tmp_path):
    x = BufferArg("x", T["fp32"], (4,), Init("zeros"))
    out = BufferArg("out", T["fp32"], (3, 4), Init("zeros"))
    buffers = {"x": x, "out": out}
    wrong = BufferArg("wrong", T["fp32"], (5,), Init("zeros"))          # 5 does not go into 4
    reasons = [
        device_check(Check("out", expect=parse_expr("wrong", arrays=True)), out,
                     {"wrong": wrong, "out": out}, {}),
        device_check(Check("out", file=tmp_path / "r.npy"), out, buffers, {}),
        device_check(Check("out", expect=parse_expr("x", arrays=True),
                           region=(slice(1, None),)), out, buffers, {}),
        device_check(Check("g", expect=parse_expr("x", arrays=True)), None, buffers, {}),
    ]
    flat = BufferArg("flat", T["fp32"], (12,), Init("zeros"))            # as many, not the shape
    one = BufferArg("one", T["fp32"], (1, 3, 4), Init("zeros"))         # the shape, a leading 1
    reasons.append(device_check(Check("out", expect=parse_expr("flat", arrays=True)), out,
                                {"flat": flat, "out": out}, {}))
    assert [type(r) for r in reasons] == [HostOnly] * 5
    assert isinstance(device_check(Check("out", expect=parse_expr("one", arrays=True)), out,
                                   {"one": one, "out": out}, {}), DeviceCheck)
    assert "does not broadcast" in reasons[0].reason and "file" in reasons[1].reason
    assert isinstance(device_check(Check("out", expect=parse_expr("x", arrays=True)), out,
                                   buffers, {}), DeviceCheck)      # (4,) broadcasts to (3, 4)


def test_digest_sees_any_byte_and_any_reordering():
    module = hostcxx.build(dd.draws_source())

    def digest(data: bytes, threads: int = 1) -> int:
        buf = np.frombuffer(b"\0" + bytes(data), np.uint8)    # [1:]: an odd address
        out = np.zeros(1, np.uint64)
        module.launch("cr_digest", threads, buf[1:] if len(data) else buf, U(len(data)), out)
        return int(out[0])
    data = bytes(np.random.default_rng(0).integers(0, 256, 1003, dtype=np.uint8))
    base = digest(data)
    aligned = np.zeros(1003 + 8, np.uint8)
    at = (-aligned.ctypes.data) % 8
    aligned[at:at + 1003] = np.frombuffer(data, np.uint8)
    word = np.zeros(1, np.uint64)
    module.launch("cr_digest", 3, aligned[at:], U(1003), word)
    assert int(word[0]) == base                         # whole words read at once: the same
    assert digest(data, threads=7) == base                      # however the threads split it
    for at in (0, 500, 1000, 1002):                             # any byte, the tail's too
        changed = bytearray(data)
        changed[at] ^= 1
        assert digest(bytes(changed)) != base
    assert digest(data[8:16] + data[:8] + data[16:]) != base    # words swapped


def test_the_sources_compile_with_nvrtc_for_the_device():
    """What the host build proves is what NVRTC builds: the same sources, with the
    device's atomics and intrinsics, compile for sm_90 (no GPU needed)."""
    from cubinrun.binary.nvrtc import compile_cuda
    from cubinrun.errors import BuildError
    try:
        draws = compile_cuda(dd.draws_source(), name="cubinrun_device_draws.cu", arch="sm_90",
                             options=["--fmad=false"])
    except BuildError as exc:
        if "not available" in str(exc):
            pytest.skip("no NVRTC")
        raise
    for kernel in (b"cr_uniform", b"cr_normal_segments", b"cr_normal_values", b"cr_int_counts",
                   b"cr_int_values", b"cr_arange", b"cr_fill8", b"cr_digest"):
        assert kernel in draws.cubin
    x = BufferArg("x", T["fp16"], (10,), Init("zeros"))
    y = BufferArg("y", T["i32"], (10,), Init("zeros"))
    for dtype in ("fp32", "bf16", "i8", "u64", "i1"):
        out = BufferArg("out", T[dtype], (10,), Init("zeros"))
        dc = device_check(Check("out", expect=parse_expr("where(x > 0, a * x + y, max(y, 3))",
                                                         arrays=True)),
                          out, {"x": x, "y": y, "out": out}, {"a": 2.5})
        built = compile_cuda(dc.source, name="cubinrun_device_check.cu", arch="sm_90",
                             options=["--fmad=false"])
        assert b"cr_check" in built.cubin and b"cr_check_show" in built.cubin
    bias = BufferArg("bias", T["fp32"], (1, 10), Init("zeros"))       # broadcast: Shape8 params
    grid = BufferArg("out", T["fp32"], (3, 10), Init("zeros"))
    dc = device_check(Check("out", expect=parse_expr("bias * 2", arrays=True)), grid,
                      {"bias": bias, "out": grid}, {})
    assert [t for t, _ in dc.scalars] == ["s", "s", "i"]        # strides, dims, the 2
    assert b"cr_check" in compile_cuda(dc.source, name="cubinrun_device_check.cu", arch="sm_90",
                                       options=["--fmad=false"]).cubin


def test_an_input_made_whole_ahead_is_still_drawn_the_same_on_the_device():
    b = buffer("y", "fp32", 5000, Init("random", distribution="normal", seed=4))
    made = input_values(b, 1).made()            # what a worker of --processes makes ahead
    plan = device_draw(b, 1, made)
    assert plan == device_draw(b, 1)
    same_bits(draw_on_host_cxx(plan), b, 1)


@pytest.mark.parametrize("first,n", [(1, 5), (262_143, 3), (262_144, 1000), (10**9 + 7, 999)])
def test_uniform_from_any_offset_is_that_part_of_the_stream(first, n):
    """cr_uniform's `first`: values first .. first + n - 1 of the stream, wherever
    they lie (the host's blocks of 2**18 at their seams, far past them)."""
    from cubinrun.hostdata.pcgstream import Stream, uniform
    module = hostcxx.build(dd.draws_source())
    stream = Stream(42, 1)
    out = np.zeros(n)
    module.launch("cr_uniform", 4, out, U(n), C.c_int(0), -2.0, 5.0,
                  *[U(w) for w in dd._state_words(stream)], U(first))
    assert np.array_equal(out, uniform(stream, -2.0, 3.0, first, first + n))


def test_a_numpy_whose_tables_are_not_found_draws_its_normals_on_the_host(monkeypatch):
    monkeypatch.setattr(dd, "_found_tables", lambda: None)
    b = buffer("y", "fp32", 10, Init("random", distribution="normal"))
    found = device_draw(b)
    assert isinstance(found, HostOnly) and "tables" in found.reason
    assert isinstance(device_draw(buffer("x", "fp32", 10, Init("random"))), DeviceDraw)
