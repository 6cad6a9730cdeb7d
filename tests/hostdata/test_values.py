"""Host arrays: every init on every dtype family, seeds, fp8e4b15, .npy files."""
from __future__ import annotations

import contextlib
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from cubinrun.hostdata import values as hostdata
from cubinrun.dtypes import ELEMENT_TYPES
from cubinrun.errors import SpecError
from cubinrun.hostdata.values import (
    decode_fp8e4b15, default_seed, encode_fp8e4b15, load_for, make_host_array, save_array,
    to_float64)
from cubinrun.specfile.model import BufferArg, Init
from support.repo import REPO


ALL = list(ELEMENT_TYPES)
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
BOOLS = ["i1", "u1"]
FLOATS = ["fp16", "bf16", "fp32", "fp64", "fp8e4nv", "fp8e5", "fp8e4b15"]
T = ELEMENT_TYPES


def make(dtype: str, shape=(4, 6), name="x", **init) -> np.ndarray:
    kind = init.pop("kind")
    return make_host_array(BufferArg(name, T[dtype], tuple(shape), Init(kind, **init)))


def values(array: np.ndarray, dtype: str) -> np.ndarray:
    return to_float64(array, T[dtype])


@contextlib.contextmanager
def spec_error(match: str, field: str):
    """pytest.raises for a SpecError located at `field`."""
    with pytest.raises(SpecError, match=match) as info:
        yield info
    assert info.value.field == field


# ---------------------------------------------------------------- layout, zeros, ones

@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("kind", ["zeros", "ones"])
def test_zeros_ones_have_shape_dtype_and_value(dtype, kind):
    a = make(dtype, kind=kind)
    assert a.shape == (4, 6) and a.flags.c_contiguous
    assert a.dtype == T[dtype].numpy_dtype()
    assert np.all(values(a, dtype) == (0.0 if kind == "zeros" else 1.0))


def test_host_dtypes_of_narrow_floats():
    assert make("bf16", kind="zeros").dtype == np.dtype(ml_dtypes.bfloat16)
    assert make("fp8e4nv", kind="zeros").dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert make("fp8e5", kind="zeros").dtype == np.dtype(ml_dtypes.float8_e5m2)
    ones = make("fp8e4b15", kind="ones")
    assert ones.dtype == np.uint8 and np.all(ones == 0x78)       # 0.1111.000: 2**(15-15)


# ---------------------------------------------------------------- arange

@pytest.mark.parametrize("dtype", INTS + ["fp16", "bf16", "fp32", "fp64", "fp8e4nv"])
def test_arange_counts_in_flat_order(dtype):
    a = make(dtype, shape=(3, 4), kind="arange")
    assert values(a, dtype).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


@pytest.mark.parametrize("dtype", BOOLS)
def test_arange_on_booleans_alternates(dtype):
    assert make(dtype, shape=(5,), kind="arange").tolist() == [0, 1, 0, 1, 0]


def test_arange_wraps_integers_modulo_2_bits():
    i8 = make("i8", shape=(300,), kind="arange")
    assert (i8[127], i8[128], i8[255], i8[256], i8[299]) == (127, -128, -1, 0, 43)
    u8 = make("u8", shape=(300,), kind="arange")
    assert (u8[255], u8[256]) == (255, 0)
    u16 = make("u16", shape=(70000,), kind="arange")
    assert u16[65536] == 0 and u16[69999] == 69999 - 65536


def test_arange_rounds_as_the_dtype_does():
    fp16 = values(make("fp16", shape=(2053,), kind="arange"), "fp16")
    assert fp16[2048] == 2048 and fp16[2049] == 2048 and fp16[2051] == 2052   # ties to even
    e5 = values(make("fp8e5", shape=(12,), kind="arange"), "fp8e5")
    assert e5[8:].tolist() == [8, 8, 10, 12]                # 2 mantissa bits


@pytest.mark.parametrize("dtype, n", [("fp8e4nv", 500), ("fp8e4b15", 3), ("fp16", 70000)])
def test_arange_that_overflows_is_an_error(dtype, n):
    with spec_error("overflows", "args.x.init"):
        make(dtype, shape=(n,), kind="arange")


def test_arange_fp8e4b15_fits_two_values():
    assert make("fp8e4b15", shape=(2,), kind="arange").tolist() == [0x00, 0x78]


# ---------------------------------------------------------------- random: defaults

@pytest.mark.parametrize("dtype, low, high", [
    ("i8", -8, 7), ("i16", -8, 7), ("i32", -8, 7), ("i64", -8, 7),
    ("u8", 0, 15), ("u16", 0, 15), ("u32", 0, 15), ("u64", 0, 15),
    ("i1", 0, 1), ("u1", 0, 1)])
def test_random_default_integers_cover_a_small_range(dtype, low, high):
    a = make(dtype, shape=(4096,), kind="random")
    assert a.dtype == T[dtype].numpy_dtype()
    assert sorted(set(a.tolist())) == list(range(low, high + 1))


@pytest.mark.parametrize("dtype", FLOATS)
def test_random_default_floats_are_uniform_in_minus_one_one(dtype):
    v = values(make(dtype, shape=(4096,), kind="random"), dtype)
    assert v.min() >= -1.0 and v.max() <= 1.0        # rounding may reach 1.0
    assert abs(v.mean()) < 0.06 and (v < -0.5).mean() > 0.2 and (v > 0.5).mean() > 0.2


def test_random_fp32_is_default_rng_uniform_rounded():
    a = make("fp32", shape=(1000,), kind="random", seed=7)
    expected = np.random.default_rng(7).uniform(-1, 1, 1000).astype(np.float32)
    assert np.array_equal(a, expected)


def test_random_bf16_rounds_the_float64_draws():
    a = make("bf16", shape=(1000,), kind="random", seed=3, low=0.0, high=4.0)
    expected = np.random.default_rng(3).uniform(0, 4, 1000).astype(ml_dtypes.bfloat16)
    assert np.array_equal(a.view(np.uint16), expected.view(np.uint16))


# ---------------------------------------------------------------- random: uniform bounds

def test_uniform_floats_in_given_bounds():
    v = values(make("fp32", shape=(2000,), kind="random", low=2.0, high=3.0), "fp32")
    assert v.min() >= 2.0 and v.max() < 3.0 and v.max() > 2.9


def test_uniform_integers_are_the_whole_numbers_in_bounds():
    a = make("i32", shape=(2000,), kind="random", low=-2.5, high=3.0)
    assert sorted(set(a.tolist())) == [-2, -1, 0, 1, 2]


def test_uniform_u64_full_range():
    a = make("u64", shape=(1000,), kind="random", low=0.0, high=2.0 ** 64)
    assert a.dtype == np.uint64 and int(a.max()) > 2 ** 63


@pytest.mark.parametrize("dtype, low, high", [
    ("u8", -1.0, 10.0), ("i8", 0.0, 200.0), ("fp16", 0.0, 1e5),
    ("fp8e4nv", -500.0, 0.0), ("fp8e4b15", -1.0, 2.0), ("u1", 0.0, 3.0)])
def test_uniform_bounds_outside_the_dtype_are_errors(dtype, low, high):
    with spec_error("do(es)? not fit", "args.x.init"):
        make(dtype, kind="random", low=low, high=high)


def test_uniform_with_one_bound_past_the_default_other_is_an_error():
    with spec_error("is empty", "args.x.init"):
        make("fp32", kind="random", low=2.0)
    assert values(make("fp32", kind="random", high=-0.5), "fp32").max() < -0.5


def test_uniform_without_an_integer_is_an_error():
    with spec_error("no integer", "args.x.init"):
        make("i32", kind="random", low=0.2, high=0.8)


# ---------------------------------------------------------------- random: normal

def test_normal_floats_have_the_asked_moments():
    v = values(make("fp32", shape=(100_000,), kind="random", distribution="normal",
                    mean=5.0, std=2.0), "fp32")
    assert abs(v.mean() - 5.0) < 0.05 and abs(v.std() - 2.0) < 0.05


@pytest.mark.parametrize("dtype", ["i8", "i32", "u16", "u64"])
def test_normal_integers_are_rounded_draws(dtype):
    a = make(dtype, shape=(20_000,), kind="random", distribution="normal", mean=50.0, std=3.0)
    assert a.dtype == T[dtype].numpy_dtype()
    assert abs(a.astype(np.float64).mean() - 50.0) < 0.2
    assert 30 <= int(a.min()) and int(a.max()) <= 70


def test_normal_matches_default_rng_rounded():
    a = make("fp16", shape=(500,), kind="random", distribution="normal", mean=1.0, std=0.5,
             seed=11)
    expected = np.random.default_rng(11).normal(1.0, 0.5, 500).astype(np.float16)
    assert np.array_equal(a, expected)


@pytest.mark.parametrize("dtype, mean, std", [
    ("u8", 0.0, 1.0), ("fp8e4b15", 0.0, 1.0), ("i8", 0.0, 30.0), ("fp8e4nv", 400.0, 10.0)])
def test_normal_that_does_not_fit_is_an_error(dtype, mean, std):
    with spec_error("mean \\+- 6 std", "args.x.init"):
        make(dtype, kind="random", distribution="normal", mean=mean, std=std)


def test_normal_fp8e4b15_with_a_small_std():
    v = values(make("fp8e4b15", shape=(5000,), kind="random", distribution="normal",
                    std=0.25), "fp8e4b15")
    assert abs(v.std() - 0.25) < 0.02 and np.abs(v).max() <= 1.875


def test_normal_tails_saturate_to_the_range(monkeypatch):
    monkeypatch.setattr(hostdata, "NORMAL_SIGMAS", 1.0)   # let the tails go past i8
    a = make("i8", shape=(5000,), kind="random", distribution="normal", std=100.0)
    assert a.min() == -128 and a.max() == 127
    assert np.count_nonzero(a == 127) > 100


# ---------------------------------------------------------------- seeds

def test_same_seed_same_data_other_seed_other_data():
    first = make("fp32", shape=(256,), kind="random", seed=1)
    assert np.array_equal(first, make("fp32", shape=(256,), kind="random", seed=1))
    assert not np.array_equal(first, make("fp32", shape=(256,), kind="random", seed=2))


def test_seed_does_not_depend_on_the_name():
    assert np.array_equal(make("fp32", name="a", kind="random", seed=5),
                          make("fp32", name="b", kind="random", seed=5))


def test_default_seed_is_stable_and_differs_by_name():
    assert default_seed("x") == 1658568288612196419        # SHA-256 based: same on every machine
    a1 = make("fp32", shape=(256,), name="a", kind="random")
    a2 = make("fp32", shape=(256,), name="a", kind="random")
    b = make("fp32", shape=(256,), name="b", kind="random")
    assert np.array_equal(a1, a2) and not np.array_equal(a1, b)
    seeded = make("fp32", shape=(256,), name="a", kind="random", seed=default_seed("a"))
    assert np.array_equal(a1, seeded)


def test_index_gives_another_reproducible_array():
    buffer = BufferArg("x", T["fp32"], (256,), Init("random", seed=9))
    zero, one = make_host_array(buffer, 0), make_host_array(buffer, 1)
    assert not np.array_equal(zero, one)
    assert np.array_equal(one, make_host_array(buffer, 1))


def test_blocks_draw_the_same_stream_as_one_call(monkeypatch):
    monkeypatch.setattr(hostdata, "CHUNK", 7)
    uniform = make("fp64", shape=(100,), kind="random", seed=4)
    assert np.array_equal(uniform, np.random.default_rng(4).uniform(-1, 1, 100))
    normal = make("fp64", shape=(100,), kind="random", seed=4, distribution="normal")
    assert np.array_equal(normal, np.random.default_rng(4).normal(0, 1, 100))
    assert make("i16", shape=(100,), kind="arange")[99] == 99


# ---------------------------------------------------------------- fill

@pytest.mark.parametrize("dtype, value", [
    ("i8", -128), ("i64", -(2 ** 63)), ("u64", 2 ** 64 - 1), ("u8", 255), ("i1", True),
    ("u1", 1), ("fp64", 0.1), ("fp32", -2.5), ("fp8e4nv", 448.0), ("fp8e5", 57344.0),
    ("fp8e4b15", 1.875)])
def test_fill_holds_the_value(dtype, value):
    a = make(dtype, shape=(3,), kind="fill", value=value)
    assert a.dtype == T[dtype].numpy_dtype()
    if T[dtype].kind == "float":
        assert values(a, dtype).tolist() == [value] * 3
    else:
        assert [int(v) for v in a] == [int(value)] * 3


def test_fill_rounds_to_the_dtype():
    assert make("fp16", shape=(1,), kind="fill", value=0.1)[0] == np.float16(0.1)
    assert values(make("fp16", shape=(1,), kind="fill", value=65519.0), "fp16")[0] == 65504
    assert values(make("fp8e4b15", shape=(1,), kind="fill", value=1.9), "fp8e4b15")[0] == 1.875
    neg_zero = make("bf16", shape=(1,), kind="fill", value=-0.0)
    assert neg_zero.view(np.uint16)[0] == 0x8000


@pytest.mark.parametrize("dtype, value, match", [
    ("u8", 256, "out of range"), ("i8", -129, "out of range"), ("u1", 2, "out of range"),
    ("i32", 2.5, "needs an integer"), ("i32", 3.0, "needs an integer"),
    ("i32", float("nan"), "needs an integer"), ("u64", 2 ** 64, "out of range"),
    ("fp16", 1e5, "overflows"), ("fp32", 1e39, "overflows"), ("fp8e4nv", 500.0, "overflows"),
    ("fp8e4b15", 2.0, "overflows"), ("fp64", 10 ** 400, "overflows"),
    ("fp8e4nv", float("inf"), "no infinity"), ("fp8e4b15", float("nan"), "not allowed"),
    ("fp8e4b15", float("-inf"), "not allowed")])
def test_fill_that_does_not_fit_is_an_error(dtype, value, match):
    with spec_error(match, "args.x.init.fill"):
        make(dtype, kind="fill", value=value)


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32", "fp64", "fp8e5"])
def test_fill_nan_and_inf_where_the_dtype_has_them(dtype):
    assert np.isnan(values(make(dtype, kind="fill", value=float("nan")), dtype)).all()
    assert np.all(values(make(dtype, kind="fill", value=float("-inf")), dtype) == -np.inf)


def test_fill_nan_on_fp8e4nv():
    assert np.isnan(values(make("fp8e4nv", kind="fill", value=float("nan")), "fp8e4nv")).all()


# ---------------------------------------------------------------- fp8e4b15

def test_fp8e4b15_known_values():
    table = {0x00: 0.0, 0x80: -0.0, 0x01: 2.0 ** -17, 0x07: 7 * 2.0 ** -17, 0x08: 2.0 ** -14,
             0x70: 0.5, 0x78: 1.0, 0x7C: 1.5, 0x7E: 1.75, 0x7F: 1.875, 0xF8: -1.0,
             0xFF: -1.875, 0x3B: 1.375 * 2.0 ** -8}    # 0.0111.011: (1 + 3/8) * 2**(7 - 15)
    bits = np.array(list(table), dtype=np.uint8)
    decoded = decode_fp8e4b15(bits)
    assert decoded.dtype == np.float32
    assert decoded.tolist() == list(table.values())
    assert np.signbit(decoded[1])
    assert encode_fp8e4b15(list(table.values())).tolist() == list(table)


def test_fp8e4b15_decode_is_tritons_fp16_placement():
    bits = np.arange(256, dtype=np.uint8)
    half = ((bits.astype(np.uint16) & 0x80) << 8) | ((bits.astype(np.uint16) & 0x7F) << 7)
    assert np.array_equal(decode_fp8e4b15(bits), half.view(np.float16).astype(np.float32))
    assert np.isfinite(decode_fp8e4b15(bits)).all()            # no inf, no NaN


def test_fp8e4b15_round_trips_every_pattern():
    bits = np.arange(256, dtype=np.uint8)
    assert np.array_equal(encode_fp8e4b15(decode_fp8e4b15(bits)), bits)


def test_fp8e4b15_rounds_to_nearest_even():
    ties = [1.0625, 1.1875, 2.0 ** -18, 3 * 2.0 ** -18, 1.0 + 2.0 ** -5]
    assert encode_fp8e4b15(ties).tolist() == [0x78, 0x7A, 0x00, 0x02, 0x78]
    assert encode_fp8e4b15([-1.05, -1.07, 1.9, 0.99]).tolist() == [0xF8, 0xF9, 0x7F, 0x78]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -2.0, 1.9375])
def test_fp8e4b15_refuses_what_it_cannot_hold(value):
    with pytest.raises(ValueError, match="not representable"):
        encode_fp8e4b15([0.5, value])


# ---------------------------------------------------------------- to_float64

def test_to_float64_is_exact():
    bf = np.array([1.0078125, -3.0e38], dtype=ml_dtypes.bfloat16)
    assert to_float64(bf, T["bf16"]).tolist() == [1.0078125, float(bf[1])]
    assert to_float64(np.array([0x7F], np.uint8), T["fp8e4b15"]).tolist() == [1.875]
    assert to_float64(np.array([0x7F], np.uint8), T["u8"]).tolist() == [127.0]
    assert to_float64(np.array([2 ** 53], np.uint64), T["u64"]).dtype == np.float64


# ---------------------------------------------------------------- files

@pytest.mark.parametrize("dtype", ALL)
def test_saved_random_arrays_load_back_bit_for_bit(dtype, tmp_path):
    original = make(dtype, shape=(5, 3), kind="random")
    path = save_array(original, tmp_path / "deep" / "er" / "x.npy", T[dtype])
    assert path.exists()
    loaded = make(dtype, shape=(5, 3), kind="file", path=path)
    assert loaded.dtype == original.dtype and loaded.flags.c_contiguous
    assert np.array_equal(loaded.view(np.uint8), original.view(np.uint8))


@pytest.mark.parametrize("dtype", ["bf16", "fp8e4nv", "fp8e5", "fp8e4b15"])
def test_narrow_floats_are_saved_as_float32_values(dtype, tmp_path):
    a = make(dtype, shape=(8,), kind="random")
    save_array(a, tmp_path / "a.npy", T[dtype])
    saved = np.load(tmp_path / "a.npy")
    assert saved.dtype == np.float32 and np.array_equal(saved, values(a, dtype))


def test_plain_dtypes_are_saved_as_they_are(tmp_path):
    a = make("u64", shape=(4,), kind="fill", value=2 ** 64 - 1)
    save_array(a, tmp_path / "u.npy")
    assert np.load(tmp_path / "u.npy").tolist() == [2 ** 64 - 1] * 4
    raw_e4b15 = make("fp8e4b15", shape=(2,), kind="ones")
    save_array(raw_e4b15, tmp_path / "raw.npy")                 # no dtype: its raw bytes
    assert np.load(tmp_path / "raw.npy").tolist() == [0x78, 0x78]


def test_file_of_a_safe_or_exact_dtype_is_converted(tmp_path):
    np.save(tmp_path / "i16.npy", np.array([[1, -2], [3, 4]], dtype=np.int16))
    np.save(tmp_path / "f64.npy", np.array([[1.0, -2.0], [3.0, 4.0]]))
    np.save(tmp_path / "f32.npy", np.array([[1.5, -2.0], [0.0078125, 256.0]], np.float32))
    assert make("i32", shape=(2, 2), kind="file", path=tmp_path / "i16.npy").tolist() == \
        [[1, -2], [3, 4]]
    assert make("i32", shape=(2, 2), kind="file", path=tmp_path / "f64.npy").tolist() == \
        [[1, -2], [3, 4]]
    bf = make("bf16", shape=(2, 2), kind="file", path=tmp_path / "f32.npy")
    assert values(bf, "bf16").tolist() == [[1.5, -2.0], [0.0078125, 256.0]]
    np.save(tmp_path / "e4b15.npy", np.array([[1.0, -0.5], [0.0, 1.875]]))
    e4b15 = make("fp8e4b15", shape=(2, 2), kind="file", path=tmp_path / "e4b15.npy")
    assert e4b15.tolist() == [[0x78, 0xF0], [0x00, 0x7F]]
    np.save(tmp_path / "flags.npy", np.array([[True, False], [False, True]]))
    ones = make("fp8e4b15", shape=(2, 2), kind="file", path=tmp_path / "flags.npy")
    assert ones.tolist() == [[0x78, 0x00], [0x00, 0x78]]     # values, not raw bytes
    raw = np.array([[1.0, 0.5], [1.5, 0.0]]).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "raw_bf16.npy", raw)                     # stored as anonymous V2
    assert values(make("bf16", shape=(2, 2), kind="file", path=tmp_path / "raw_bf16.npy"),
                  "bf16").tolist() == [[1.0, 0.5], [1.5, 0.0]]


@pytest.mark.parametrize("dtype, data, match", [
    ("fp16", np.array([1.0, 0.1]), r"element \(1,\) = 0.1"),
    ("u8", np.array([1, 300]), r"element \(1,\) = 300"),
    ("i32", np.array([1.0, 2.5]), r"element \(1,\) = 2.5"),
    ("i64", np.array([2.0 ** 63, 0.0]), r"element \(0,\)"),
    ("fp32", np.array([2 ** 53 + 1, 0], dtype=np.int64), r"element \(0,\)"),
    ("fp8e4b15", np.array([1.0, 3.0]), r"element \(1,\) = 3.0"),
    ("fp32", np.array([1 + 1j, 0]), "cannot be converted"),
])
def test_file_with_a_lossy_dtype_is_an_error(dtype, data, match, tmp_path):
    np.save(tmp_path / "d.npy", data)
    with spec_error(f"d.npy.*{match}", "args.x.init.file"):
        make(dtype, shape=(2,), kind="file", path=tmp_path / "d.npy")


def test_file_with_another_shape_is_an_error(tmp_path):
    np.save(tmp_path / "s.npy", np.zeros((3, 2), np.float32))
    with spec_error(r"s.npy has shape \[3, 2\], the buffer is \[2, 3\]", "args.x.init.file"):
        make("fp32", shape=(2, 3), kind="file", path=tmp_path / "s.npy")


def test_unreadable_files_are_errors(tmp_path):
    (tmp_path / "bad.npy").write_bytes(b"not a numpy file")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    for name in ("bad.npy", "obj.npy", "missing.npy"):
        with spec_error("cannot read", "args.x.init.file"):
            make("fp32", shape=(1,), kind="file", path=tmp_path / name)


def test_load_for_takes_fortran_order_and_byte_swapped_files(tmp_path):
    data = np.asfortranarray(np.arange(6, dtype=">f4").reshape(2, 3))
    np.save(tmp_path / "f.npy", data)
    loaded = load_for(tmp_path / "f.npy", T["fp32"], (2, 3), "args.x.init.file")
    assert loaded.flags.c_contiguous and loaded.dtype == np.dtype("<f4")
    assert loaded.tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("name, biggest", [
    ("fp16", 65504.0), ("fp32", 3.4028234663852886e38), ("fp64", 1.7976931348623157e308),
    ("bf16", 3.3895313892515355e38), ("fp8e4nv", 448.0), ("fp8e5", 57344.0),
    ("fp8e4b15", 1.875)])
def test_finite_range_of_every_float_type(name, biggest):
    assert hostdata.finite_range(ELEMENT_TYPES[name]) == (-biggest, biggest)


def test_numpy_float_data_does_not_import_ml_dtypes():
    # ml_dtypes takes ~0.4 s to import: only bf16 / fp8 buffers may pay for it
    code = ("import sys; from cubinrun.dtypes import ELEMENT_TYPES; "
            "from cubinrun.hostdata.values import finite_range; "
            "[finite_range(ELEMENT_TYPES[t]) for t in ('fp16', 'fp32', 'fp64', 'i32')]; "
            "assert 'ml_dtypes' not in sys.modules, 'ml_dtypes imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


@pytest.mark.parametrize("dtype, init", [
    ("fp32", Init("random", seed=3)), ("fp16", Init("random", distribution="normal", seed=4)),
    ("i32", Init("arange")), ("bf16", Init("random", distribution="normal")),
    ("u8", Init("random"))])
def test_inputs_made_ahead_are_the_values_made_in_the_turn(dtype, init):
    """A worker of `launch --processes` makes its next run's inputs while another
    process times (InputValues.made, on the background threads): the very same
    bits as the block-by-block values the turn would make, over several blocks."""
    buffer = BufferArg("x", T[dtype], (3, 700_001), init)
    later = hostdata.input_values(buffer)
    ahead = hostdata.input_values(buffer).made()
    assert later.blocks > 1
    assert ahead.whole().tobytes() == later.whole().tobytes()
    assert ahead.values(5, 9).tobytes() == later.values(5, 9).tobytes()


def test_a_memset_input_is_left_a_memset_when_made_ahead():
    filled = hostdata.input_values(BufferArg("x", T["fp32"], (1 << 20,), Init("ones")))
    assert filled.made() is filled and filled.pattern is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's nice value is Linux's")
def test_background_threads_run_at_the_lowest_priority():
    """So a worker getting ready never takes a core from the process timing a kernel."""
    import os
    import threading

    from cubinrun.hostdata import threads
    nice = threads.background_pool().submit(
        lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())).result()
    assert nice == threads.LOWEST_PRIORITY
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != threads.LOWEST_PRIORITY
