"""The generated launcher against a fake libcuda that records each launch.

Expected parameter bytes come from independent references: struct for
integers, fp32 and fp64, NumPy for fp16 (it rounds straight from the double),
and exact rational arithmetic for bf16.
"""
from __future__ import annotations

import itertools
import math
import struct
import sys

import numpy as np
import pytest

from cubinrun.launcher import load_launcher
from cubinrun.signature import expand, leaf_size, parse_signature
from fakecuda import CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, fake_driver_env
from support.halfbits import bf16_bits, fp16_bits

SCALARS = "i1 i8 i16 i32 i64 u1 u8 u16 u32 u64 fp16 bf16 fp32 fp64".split()
EVERYTHING = SCALARS + ["*fp32", "*kbf16", "nvTmaDesc"]
PTR, CONST_PTR, TMA = 14, 15, 16          # slots of the pointers and the tensor map
INT_FORMATS = {"i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
               "u1": "B", "u8": "B", "u16": "H", "u32": "I", "u64": "Q"}
INT_RANGES = {"i1": (0, 1), "u1": (0, 1),
              **{f"i{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)},
              **{f"u{b}": (0, (1 << b) - 1) for b in (8, 16, 32, 64)}}

# CUlaunchAttributeID and CUclusterSchedulingPolicy values from cuda.h
COOPERATIVE, CLUSTER_DIMENSION, CLUSTER_SCHEDULING, PROGRAMMATIC_SERIALIZATION = 2, 4, 5, 6
SPREAD = 1


def test_bf16_reference_agrees_with_known_encodings():
    assert [bf16_bits(x) for x in (1.0, -2.0, 0.5, 2.0 ** -133, 3.3895313892515355e38)] == \
        [0x3F80, 0xC000, 0x3F00, 0x0001, 0x7F7F]


def expected_bytes(leaf_type: str, value) -> bytes:
    if leaf_type in INT_FORMATS:
        return struct.pack("<" + INT_FORMATS[leaf_type], value)
    if leaf_type == "fp16":
        return struct.pack("<H", fp16_bits(value))
    if leaf_type == "bf16":
        return struct.pack("<H", bf16_bits(value))
    if leaf_type == "fp32":
        return struct.pack("<f", value)
    if leaf_type == "fp64":
        return struct.pack("<d", value)
    raise AssertionError(leaf_type)


# --- fixtures ----------------------------------------------------------------

@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    with fake_driver_env(tmp_path_factory.mktemp("fakecuda")) as driver:
        yield driver


@pytest.fixture(autouse=True)
def _fresh_fake(fake):
    fake.reset()


@pytest.fixture(scope="module")
def everything(fake):
    """Every scalar type, both pointer kinds and a tensor map, with both scratch pointers."""
    return load_launcher(EVERYTHING, 2)


_addresses = itertools.count(0x7F00_0000_0000, 0x1_0000)


def fresh_address() -> int:
    """A device address no earlier test used: the launcher caches checked pointers per slot."""
    return next(_addresses)


def default_args() -> list:
    return [0] * 10 + [0.0] * 4 + [None, None, bytes(128)]


def launch_everything(fake, module, config=None, args: dict | None = None):
    """Launch `everything` with default args, some replaced ({slot: value}); the launch recorded."""
    values = default_args()
    for slot, value in (args or {}).items():
        values[slot] = value
    fake.set_param_sizes([leaf_size(t) for t in EVERYTHING] + [8, 8])
    config = config or module.Config(0xF00D, (128, 1, 1))
    module.launch(config, 1, 1, 1, 0, *values)
    return fake.launches()[-1]


def param_of(fake, module, slot, value):
    return launch_everything(fake, module, args={slot: value}).params[slot]


# --- the module ----------------------------------------------------------------

def test_module_constants(everything):
    assert everything.SIGNATURE == tuple(EVERYTHING)
    assert everything.NUM_SCRATCH == 2
    assert isinstance(everything.ABI, int)
    assert issubclass(everything.CudaCallError, RuntimeError)
    assert issubclass(everything.DriverLoadError, RuntimeError)


def test_default_launch_passes_every_parameter_then_the_scratch_pointers(fake, everything):
    config = everything.Config(0xF00D, (128, 1, 1), global_scratch=0xA000, profile_scratch=0xB000)
    launch = launch_everything(fake, everything, config)
    assert launch.function == 0xF00D
    assert launch.params[:14] == [bytes(leaf_size(t)) for t in SCALARS]
    assert launch.params[PTR] == launch.params[CONST_PTR] == bytes(8)
    assert launch.params[TMA] == bytes(128)
    assert launch.params[17:] == [struct.pack("<Q", 0xA000), struct.pack("<Q", 0xB000)]


# --- integers --------------------------------------------------------------------

@pytest.mark.parametrize("slot, leaf_type", list(enumerate(SCALARS[:10])))
def test_integer_limits_are_passed_exactly(fake, everything, slot, leaf_type):
    lo, hi = INT_RANGES[leaf_type]
    for value in (lo, hi):
        assert param_of(fake, everything, slot, value) == expected_bytes(leaf_type, value)


@pytest.mark.parametrize("slot, leaf_type", list(enumerate(SCALARS[:10])))
def test_integer_out_of_range_is_an_overflow_error_naming_the_argument(fake, everything, slot,
                                                                       leaf_type):
    lo, hi = INT_RANGES[leaf_type]
    for value in (lo - 1, hi + 1):
        with pytest.raises(OverflowError, match=rf"argument {slot} \({leaf_type}\): {value} "
                                                rf"out of range \[{lo}, {hi}\]"):
            launch_everything(fake, everything, args={slot: value})
    assert fake.launches() == []


def test_integers_accept_bools_and_numpy_integers(fake, everything):
    assert param_of(fake, everything, 0, True) == b"\x01"
    assert param_of(fake, everything, 5, False) == b"\x00"
    assert param_of(fake, everything, 2, np.int16(-7)) == struct.pack("<h", -7)


def test_integer_argument_rejects_floats_and_strings(fake, everything):
    for value in (1.0, "1"):
        with pytest.raises(TypeError, match=r"argument 3 \(i32\): expected an int, got"):
            launch_everything(fake, everything, args={3: value})


# --- floats ------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -2.5, math.inf, -math.inf]

FP16_VALUES = SPECIAL + [
    65504.0,                       # max
    -65504.0,
    65519.99,                      # just below the tie with inf: rounds to max
    2.0 ** -14,                    # smallest normal
    2.0 ** -24,                    # smallest subnormal
    1023 * 2.0 ** -24,             # largest subnormal
    2.0 ** -25,                    # tie between 0 and the smallest subnormal: to 0
    2.0 ** -25 + 2.0 ** -60,       # just above it: up
    1.5 * 2.0 ** -24,              # subnormal tie: to even (2)
    2.5 * 2.0 ** -24,              # subnormal tie: to even (2)
    1 + 2.0 ** -11,                # tie: down to even 1.0
    1 + 3 * 2.0 ** -11,            # tie: up to even
    1 + 2.0 ** -11 + 2.0 ** -40,   # above a tie by less than float32 can hold: up, not down
    5e-324,                        # a double subnormal
    0.1, 3.14159,
]

BF16_VALUES = SPECIAL + [
    3.3895313892515355e38,                      # max
    2.0 ** 128 - 2.0 ** 119 - 2.0 ** 100,       # just below the tie with inf: rounds to max
    2.0 ** -126,                                # smallest normal
    2.0 ** -133,                                # smallest subnormal
    2.0 ** -134,                                # tie between 0 and it: to 0
    2.0 ** -134 + 2.0 ** -160,                  # just above it: up
    3 * 2.0 ** -134,                            # subnormal tie: to even (2)
    1 + 2.0 ** -8,                              # tie: down to even 1.0
    1 + 3 * 2.0 ** -8,                          # tie: up to even
    1 + 2.0 ** -8 + 2.0 ** -30,                 # lost when rounded through float32 first
    1 + 0.75 * 2.0 ** -7,                       # truncation would give 1.0
    -5e-324, 0.1, 3.14159, 1e-40,
]


@pytest.mark.parametrize("value", FP16_VALUES)
def test_fp16_rounds_to_nearest_even_from_the_double(fake, everything, value):
    assert param_of(fake, everything, 10, value) == expected_bytes("fp16", value)


@pytest.mark.parametrize("value", BF16_VALUES)
def test_bf16_rounds_to_nearest_even_from_the_double(fake, everything, value):
    assert param_of(fake, everything, 11, value) == expected_bytes("bf16", value)


@pytest.mark.parametrize("slot, leaf_type, quiet_nan", [
    (10, "fp16", 0x7E00), (11, "bf16", 0x7FC0), (12, "fp32", 0x7FC00000),
    (13, "fp64", 0x7FF8000000000000)])
def test_nan_stays_a_quiet_nan_with_its_sign(fake, everything, slot, leaf_type, quiet_nan):
    size = leaf_size(leaf_type)
    signalling = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000001))[0]
    for value, expected in [(math.nan, quiet_nan), (-math.nan, quiet_nan | 1 << (8 * size - 1))]:
        assert param_of(fake, everything, slot, value) == expected.to_bytes(size, "little")
    if size == 2:                  # a payload is not carried into 16 bits: still the quiet NaN
        assert param_of(fake, everything, slot, signalling) == quiet_nan.to_bytes(2, "little")


@pytest.mark.parametrize("slot, leaf_type, too_large", [
    (10, "fp16", 65520.0),                       # the tie between max and inf rounds to inf
    (10, "fp16", -1e5),
    (11, "bf16", 2.0 ** 128 - 2.0 ** 119),       # the tie
    (11, "bf16", 3.4028234663852886e38),         # float32's max is past bf16's
    (12, "fp32", 1e39),
    (12, "fp32", -1e300),
])
def test_finite_float_overflow_is_an_error_not_inf(fake, everything, slot, leaf_type, too_large):
    with pytest.raises(OverflowError, match=rf"argument {slot} \({leaf_type}\): .* out of range"):
        launch_everything(fake, everything, args={slot: too_large})


@pytest.mark.parametrize("value", [0.1, -1.5, 3.4028234663852886e38, 1e-45, 123456789.0])
def test_fp32_and_fp64_are_the_rounded_and_exact_values(fake, everything, value):
    assert param_of(fake, everything, 12, value) == struct.pack("<f", value)
    assert param_of(fake, everything, 13, value) == struct.pack("<d", value)


def test_floats_accept_ints_and_numpy_scalars_but_not_strings(fake, everything):
    assert param_of(fake, everything, 13, 3) == struct.pack("<d", 3.0)
    assert param_of(fake, everything, 12, np.float32(0.25)) == struct.pack("<f", 0.25)
    assert param_of(fake, everything, 11, 2 ** 20) == struct.pack("<H", bf16_bits(2.0 ** 20))
    with pytest.raises(TypeError, match=r"argument 12 \(fp32\): expected a float or an int"):
        launch_everything(fake, everything, args={12: "0.5"})
    with pytest.raises(OverflowError, match=r"argument 13 \(fp64\)"):
        launch_everything(fake, everything, args={13: 10 ** 400})


# --- pointers ------------------------------------------------------------------------

class Tensor:
    """Anything with data_ptr(), as torch tensors have."""

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


def test_pointers_from_ints_none_and_data_ptr(fake, everything):
    a, b = fresh_address(), fresh_address()
    launch = launch_everything(fake, everything, args={PTR: a, CONST_PTR: Tensor(b)})
    assert launch.params[PTR] == struct.pack("<Q", a)
    assert launch.params[CONST_PTR] == struct.pack("<Q", b)
    assert fake.pointer_calls == 2
    launch = launch_everything(fake, everything, args={PTR: None, CONST_PTR: Tensor(0)})
    assert launch.params[PTR] == launch.params[CONST_PTR] == bytes(8)
    assert fake.pointer_calls == 2                      # null is never checked


def test_the_device_pointer_the_driver_returns_is_passed(fake, everything):
    a = fresh_address()
    fake.add_pointer_rule(a, a + 1, result=0, delta=0x100)
    assert param_of(fake, everything, PTR, a) == struct.pack("<Q", a + 0x100)


def test_host_pointer_is_a_value_error_naming_argument_and_address(fake, everything):
    a = fresh_address()
    fake.add_pointer_rule(a, a + 0x1000)
    for _ in range(2):                                  # a rejected address is not cached
        with pytest.raises(ValueError, match=rf"argument {PTR}: pointer 0x{a + 8:x} is not "
                                             r"device memory \(host pointer\?\)"):
            launch_everything(fake, everything, args={PTR: Tensor(a + 8)})
    assert fake.pointer_calls == 2
    assert fake.launches() == []


def test_other_pointer_check_failures_are_cuda_call_errors(fake, everything):
    a = fresh_address()
    fake.add_pointer_rule(a, a + 1, result=CUDA_ERROR_INVALID_CONTEXT)
    with pytest.raises(everything.CudaCallError) as caught:
        launch_everything(fake, everything, args={PTR: a})
    assert caught.value.args == ("cuPointerGetAttribute", CUDA_ERROR_INVALID_CONTEXT)


def test_pointer_check_is_cached_per_slot(fake, everything):
    a, b = fresh_address(), fresh_address()
    calls = []
    for pointer in (a, a, b, b, a):
        launch_everything(fake, everything, args={PTR: pointer})
        calls.append(fake.pointer_calls)
    assert calls == [1, 1, 2, 2, 3]
    launch_everything(fake, everything, args={CONST_PTR: a})   # another slot checks it once
    assert fake.pointer_calls == 4


def test_bad_pointer_arguments(fake, everything):
    class Broken:
        def data_ptr(self):
            return "0x10"

    with pytest.raises(TypeError, match=rf"argument {PTR}: expected a pointer .* got str"):
        launch_everything(fake, everything, args={PTR: "0x10"})
    with pytest.raises(ValueError, match=rf"argument {PTR}: data_ptr\(\) returned '0x10'"):
        launch_everything(fake, everything, args={PTR: Broken()})
    with pytest.raises(OverflowError, match=rf"argument {PTR}: pointer -1 out of range"):
        launch_everything(fake, everything, args={PTR: -1})


# --- arguments kept converted per slot --------------------------------------------

I64 = 4


def test_an_immutable_argument_is_kept_with_a_reference_until_replaced(fake, everything):
    value, other = 10**12 + 12345, 10**12 + 54321       # not cached by CPython itself
    before = sys.getrefcount(value)
    assert param_of(fake, everything, I64, value) == struct.pack("<q", value)
    assert sys.getrefcount(value) == before + 1         # held, so its address is not reused
    assert param_of(fake, everything, I64, value) == struct.pack("<q", value)
    assert param_of(fake, everything, I64, other) == struct.pack("<q", other)
    assert sys.getrefcount(value) == before


def test_a_failed_conversion_keeps_the_last_good_value(fake, everything):
    value = 10**12 + 777
    param_of(fake, everything, I64, value)
    with pytest.raises(OverflowError, match=f"argument {I64} \\(i64\\)"):
        param_of(fake, everything, I64, 2**70)
    assert param_of(fake, everything, I64, value) == struct.pack("<q", value)
    assert param_of(fake, everything, I64, -value) == struct.pack("<q", -value)


def test_objects_that_may_change_are_read_every_time(fake, everything):
    scalar = np.int64(10**12)
    before = sys.getrefcount(scalar)
    param_of(fake, everything, I64, scalar)
    assert sys.getrefcount(scalar) == before            # not an exact int: not kept
    a, b = fresh_address(), fresh_address()
    tensor = Tensor(a)
    assert param_of(fake, everything, PTR, tensor) == struct.pack("<Q", a)
    tensor.address = b                                  # the same object, a new address
    assert param_of(fake, everything, PTR, tensor) == struct.pack("<Q", b)
    desc = bytearray(128)
    assert param_of(fake, everything, TMA, desc) == bytes(128)
    desc[:4] = b"\x01\x02\x03\x04"                      # a tensor map edited in place
    assert param_of(fake, everything, TMA, desc)[:4] == b"\x01\x02\x03\x04"


# --- tensor maps -----------------------------------------------------------------

@pytest.mark.parametrize("make", [bytes, bytearray, memoryview,
                                  lambda b: np.frombuffer(b, dtype=np.uint8).copy(),
                                  lambda b: np.frombuffer(b, dtype=np.uint64).copy()])
def test_tma_descriptor_bytes_are_passed_64_byte_aligned(fake, everything, make):
    descriptor = bytes(range(128))
    launch = launch_everything(fake, everything, args={TMA: make(descriptor)})
    assert launch.params[TMA] == descriptor
    assert launch.param_alignment[TMA] == 0


def test_tma_descriptor_of_wrong_size_or_type(fake, everything):
    with pytest.raises(ValueError, match=r"argument 16 \(nvTmaDesc\): expected 128 bytes, got 127"):
        launch_everything(fake, everything, args={TMA: bytes(127)})
    with pytest.raises(TypeError, match=r"argument 16 \(nvTmaDesc\): expected a 128-byte buffer"):
        launch_everything(fake, everything, args={TMA: 0})


# --- signatures expanded by cubinrun.signature --------------------------------------

NESTED = parse_signature({
    "t": ["*fp32", ["i32", "constexpr", "fp16"]],
    "desc": "tensordesc<bf16[64, 32]>",
    "k": "constexpr",
    "n": "u8",
})


def launch_leaves(fake, module, leaves, values):
    fake.set_param_sizes([leaf_size(leaf.type) for leaf in leaves])
    module.launch(module.Config(1, (32,)), 2, 1, 1, 0, *values)
    [launch] = fake.launches()
    assert launch.params == [
        struct.pack("<Q", v) if leaf.type.startswith("*") else
        bytes(v) if leaf.type == "nvTmaDesc" else expected_bytes(leaf.type, v)
        for leaf, v in zip(leaves, values)]


def test_tuples_and_a_tensordesc_with_meta_launch_flattened(fake):
    leaves = expand(NESTED, tensordesc_meta=[{"swizzle": 3}])
    assert [leaf.type for leaf in leaves] == [
        "*fp32", "i32", "fp16", "nvTmaDesc", "i32", "i32", "i64", "i64", "u8"]
    module = load_launcher([leaf.type for leaf in leaves])
    values = [fresh_address(), -3, 0.5, bytes(range(128)), 64, 32, 32, 1, 255]
    launch_leaves(fake, module, leaves, values)


def test_a_tensordesc_without_meta_launches_decomposed(fake):
    leaves = expand(NESTED)
    assert [leaf.type for leaf in leaves] == [
        "*fp32", "i32", "fp16", "*bf16", "i64", "i64", "i64", "i64", "i1",
        "i32", "i32", "i64", "i64", "u8"]
    module = load_launcher([leaf.type for leaf in leaves])
    values = [fresh_address(), 7, -1.25, fresh_address(), 64, 32, 32, 1, True, 64, 32, 32, 1, 9]
    launch_leaves(fake, module, leaves, values)


# --- scratch ------------------------------------------------------------------------

def test_one_scratch_pointer_is_appended_last(fake):
    module = load_launcher(["i32"], 1)
    assert module.NUM_SCRATCH == 1
    fake.set_param_sizes([4, 8])
    module.launch(module.Config(1, (32,), global_scratch=0xCAFE000), 1, 1, 1, 0, 5)
    assert fake.launches()[0].params == [struct.pack("<i", 5), struct.pack("<Q", 0xCAFE000)]
    with pytest.raises(ValueError, match="profile_scratch given, but this launcher passes 1"):
        module.Config(1, (32,), profile_scratch=0x1000)


def test_scratch_is_refused_by_a_launcher_without_it(fake):
    module = load_launcher(["i32"], 0)
    assert module.Config(1, (32,), global_scratch=None, profile_scratch=0).global_scratch == 0
    with pytest.raises(ValueError, match="global_scratch given, but this launcher passes 0"):
        module.Config(1, (32,), global_scratch=0x1000)


# --- Config and the launch configuration -----------------------------------------

@pytest.fixture(scope="module")
def small(fake):
    return load_launcher(["i32"], 1)


def launch_small(fake, module, config, grid=(1, 1, 1), stream=0):
    fake.set_param_sizes([4, 8])
    module.launch(config, *grid, stream, 11)
    [launch] = fake.launches()
    return launch


def cluster_value(x, y, z):
    return struct.pack("<III", x, y, z) + bytes(4)


def test_block_shared_stream_and_function_are_passed(fake, small):
    config = small.Config(0xABCDEF, (32, 4, 2), shared=98304)
    launch = launch_small(fake, small, config, grid=(5, 6, 7), stream=0x5EED)
    assert (launch.function, launch.block, launch.shared, launch.stream) == \
        (0xABCDEF, (32, 4, 2), 98304, 0x5EED)
    assert launch.grid == (5, 6, 7)
    assert launch.attrs == []


def test_num_ctas_multiplies_grid_x_and_sets_a_spread_cluster(fake, small):
    config = small.Config(1, (128,), num_ctas=4)
    launch = launch_small(fake, small, config, grid=(3, 2, 1))
    assert launch.grid == (12, 2, 1)
    assert launch.attrs == [(CLUSTER_DIMENSION, cluster_value(4, 1, 1)),
                            (CLUSTER_SCHEDULING, struct.pack("<I", SPREAD) + bytes(12))]


def test_explicit_cluster_is_the_cluster_attribute_alone(fake, small):
    config = small.Config(1, (128,), cluster=(2, 1, 2))
    assert (config.cluster, config.num_ctas) == ((2, 1, 2), 1)
    launch = launch_small(fake, small, config, grid=(4, 2, 2))
    assert launch.grid == (4, 2, 2)
    assert launch.attrs == [(CLUSTER_DIMENSION, cluster_value(2, 1, 2))]


def test_pdl_then_cooperative_then_cluster_attributes(fake, small):
    config = small.Config(1, (128,), num_ctas=2, cooperative=True, pdl=True)
    launch = launch_small(fake, small, config)
    assert [attr_id for attr_id, _ in launch.attrs] == [
        PROGRAMMATIC_SERIALIZATION, COOPERATIVE, CLUSTER_DIMENSION, CLUSTER_SCHEDULING]
    assert launch.attrs[0][1][:4] == launch.attrs[1][1][:4] == struct.pack("<i", 1)


def test_config_attributes_read_back_and_are_read_only(small):
    config = small.Config(function=7, block=(64, 2), shared=1024, cooperative=True,
                          global_scratch=0x2000)
    assert (config.function, config.block, config.shared, config.num_ctas, config.cluster,
            config.cooperative, config.pdl, config.global_scratch, config.profile_scratch) == \
        (7, (64, 2, 1), 1024, 1, None, True, False, 0x2000, 0)
    assert "block=(64, 2, 1)" in repr(config)
    with pytest.raises(AttributeError):
        config.block = (1, 1, 1)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"num_ctas": 2, "cluster": (2, 1, 1)}, ValueError, "num_ctas or cluster, not both"),
    ({"block": (0, 1, 1)}, ValueError, r"block = 0 out of range \[1, 4294967295\]"),
    ({"block": (1, 1, 1, 1)}, ValueError, "block must be a tuple of 1 to 3 ints"),
    ({"shared": -1}, ValueError, "shared = -1 out of range"),
    ({"shared": 2 ** 32}, ValueError, "shared = 4294967296 out of range"),
    ({"num_ctas": 0}, ValueError, "num_ctas = 0 out of range"),
    ({"function": "f"}, TypeError, "function must be an int, got str"),
])
def test_bad_config(small, kwargs, error, message):
    with pytest.raises(error, match=message):
        small.Config(**{"function": 1, "block": (32,), **kwargs})


@pytest.mark.parametrize("grid", [(0, 1, 1), (4, 0, 1), (4, 1, 0)])
def test_zero_grid_launches_nothing(fake, small, grid):
    fake.set_param_sizes([4, 8])
    assert small.launch(small.Config(1, (32,)), *grid, 0, 11) is None
    assert fake.launch_count == 0


def test_bad_grid_and_stream(fake, small):
    config = small.Config(1, (32,), num_ctas=2)
    with pytest.raises(ValueError, match="gridY = -1 is negative"):
        small.launch(config, 1, -1, 1, 0, 11)
    with pytest.raises(ValueError, match="gridX = 2147483648 is too large"):
        small.launch(config, 2 ** 31, 1, 1, 0, 11)
    with pytest.raises(TypeError, match="gridZ must be an int, got float"):
        small.launch(config, 1, 1, 1.0, 0, 11)
    with pytest.raises(TypeError, match="stream must be a CUstream handle"):
        small.launch(config, 1, 1, 1, None, 11)
    assert fake.launch_count == 0


def test_a_kept_grid_is_still_checked_against_each_config(fake, small):
    gx = 2 ** 31                                   # fits alone, not times 2 CTAs
    fake.set_param_sizes([4, 8])
    small.launch(small.Config(1, (32,)), gx, 1, 1, 0, 11)
    with pytest.raises(ValueError, match="gridX = 2147483648 is too large"):
        small.launch(small.Config(1, (32,), num_ctas=2), gx, 1, 1, 0, 11)
    assert [launch.grid for launch in fake.launches()] == [(gx, 1, 1)]


def test_grid_and_stream_follow_new_values(fake, small):
    config = small.Config(1, (32,))
    fake.set_param_sizes([4, 8])
    for grid, stream in (((3, 2, 1), 5), ((3, 2, 1), 5), ((7, 1, 1), 9), ((3, 2, 1), 5)):
        small.launch(config, *grid, stream, 11)
    assert [(launch.grid, launch.stream) for launch in fake.launches()] == [
        ((3, 2, 1), 5), ((3, 2, 1), 5), ((7, 1, 1), 9), ((3, 2, 1), 5)]


def test_wrong_argument_count_or_config(small):
    config = small.Config(1, (32,))
    expected = r"launch\(\) expected 1 kernel arguments \('i32',\), got "
    with pytest.raises(TypeError, match=expected + "2"):
        small.launch(config, 1, 1, 1, 0, 1, 2)
    with pytest.raises(TypeError, match=expected + "0"):
        small.launch(config, 1, 1, 1, 0)
    with pytest.raises(TypeError, match=r"launch\(\) needs config, gridX, gridY, gridZ, stream"):
        small.launch(config, 1)
    with pytest.raises(TypeError, match=r"launch\(\): config must be a .*Config, got tuple"):
        small.launch((1, 2), 1, 1, 1, 0, 5)


# --- launch_n and driver errors --------------------------------------------------

def test_launch_n_launches_n_times_with_identical_parameters(fake, everything):
    args = default_args()
    args[3], args[12], args[PTR] = -42, 1.5, fresh_address()
    fake.set_param_sizes([leaf_size(t) for t in EVERYTHING] + [8, 8])
    config = everything.Config(3, (256,), shared=64)
    assert everything.launch_n(5, config, 7, 1, 1, 0x99, *args) is None
    launches = fake.launches()
    assert len(launches) == 5 and all(launch == launches[0] for launch in launches)
    assert launches[0].params[3] == struct.pack("<i", -42)
    assert (launches[0].grid, launches[0].stream, fake.pointer_calls) == ((7, 1, 1), 0x99, 1)


def test_launch_n_zero_and_negative(fake, small):
    config = small.Config(1, (32,))
    fake.set_param_sizes([4, 8])
    small.launch_n(0, config, 1, 1, 1, 0, 11)
    assert fake.launch_count == 0
    with pytest.raises(ValueError, match=r"n must be an int >= 0"):
        small.launch_n(-1, config, 1, 1, 1, 0, 11)
    with pytest.raises(TypeError, match=r"launch_n\(\) expected 1 kernel arguments"):
        small.launch_n(2, config, 1, 1, 1, 0)


def test_a_failed_launch_is_a_cuda_call_error(fake, small):
    fake.set_param_sizes([4, 8])
    fake.fail_launch(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    with pytest.raises(small.CudaCallError) as caught:
        small.launch(small.Config(1, (32,)), 1, 1, 1, 0, 11)
    assert caught.value.args == ("cuLaunchKernelEx", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    assert isinstance(caught.value, RuntimeError)


def test_launch_n_stops_at_the_first_error(fake, small):
    fake.set_param_sizes([4, 8])
    fake.fail_launch(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, after=3)
    with pytest.raises(small.CudaCallError, match="cuLaunchKernelEx"):
        small.launch_n(10, small.Config(1, (32,)), 1, 1, 1, 0, 11)
    assert fake.launch_count == 3
