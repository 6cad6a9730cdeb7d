"""Random inputs made block by block on the worker threads are value for value
NumPy's one sequential draw (the documented generator), on every path: aligned
normal blocks, missed guesses, ranges read again, and inputs of every kind."""
from __future__ import annotations

import numpy as np
import pytest

from cubinrun.hostdata import values as hostdata, pcgstream
from cubinrun.dtypes import ELEMENT_TYPES as T
from cubinrun.hostdata.values import input_values, make_host_array
from cubinrun.hostdata.threads import run_all
from cubinrun.hostdata.pcgstream import NormalStream, Stream, lcg_distance, uniform
from cubinrun.specfile.model import BufferArg, Init


def sequential(seed: int, index: int) -> np.random.Generator:
    """The documented generator: PCG64(seed), or the spawned sequence for index > 0."""
    if index == 0:
        return np.random.default_rng(seed)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(index,))))


def made_on_the_pool(stream: NormalStream) -> np.ndarray:
    out = np.empty(stream.n)
    size = stream.block_size

    def make(k: int) -> None:
        out[k * size:(k + 1) * size] = stream.block(k)
    run_all([lambda k=k: make(k) for k in range(stream.blocks)])
    return out


@pytest.mark.parametrize("delta", [0, 1, 7, 12345, 2 ** 40 + 3])
def test_lcg_distance_counts_the_steps_advance_took(delta):
    start = Stream(3, 1).start
    bits = np.random.PCG64(0)
    bits.state = start
    bits.advance(delta)
    assert lcg_distance(start, bits.state) == delta


def test_uniform_at_any_offset_is_the_sequential_draw():
    expected = sequential(5, 0).uniform(-2.0, 3.0, 1000)
    stream = Stream(5, 0)
    assert np.array_equal(uniform(stream, -2.0, 3.0, 0, 1000), expected)
    assert np.array_equal(uniform(stream, -2.0, 3.0, 377, 901), expected[377:901])


@pytest.mark.parametrize("seed, index, n, mean, std, block", [
    (1, 0, 1000, 0.0, 1.0, 64),            # many blocks
    (2, 1, 5000, 3.5, 0.25, 100),          # blocks not a power of two, a spawned stream
    (7, 2, 77, 0.0, 1.0, 1000),            # one short block
    (9, 0, 300_000, -1.0, 2.0, 4096),      # the measured rate takes over from the constant
])
def test_normal_blocks_are_the_sequential_draw(seed, index, n, mean, std, block):
    stream = NormalStream(Stream(seed, index), n, mean, std, block)
    expected = sequential(seed, index).normal(mean, std, n)
    assert np.array_equal(made_on_the_pool(stream), expected)
    # any range again, from the starts the blocks recorded
    edge = min(n, block) - 1
    for start, stop in [(0, n), (n // 3, n // 2), (n - 1, n), (edge, min(n, edge + 6))]:
        assert np.array_equal(stream.values(start, stop), expected[start:stop])


def test_a_missed_guess_is_drawn_again_exactly(monkeypatch):
    monkeypatch.setattr(pcgstream, "_SIGMAS", 0.0)          # margins too small to align
    monkeypatch.setattr(pcgstream, "_STEPS_PER_NORMAL", 1.5)  # and guesses far off
    redrawn = []
    real = NormalStream._redrawn

    def spy(self, k, count):
        redrawn.append(k)
        return real(self, k, count)
    monkeypatch.setattr(NormalStream, "_redrawn", spy)
    stream = NormalStream(Stream(4, 0), 20_000, 0.0, 1.0, 512)
    assert np.array_equal(made_on_the_pool(stream), sequential(4, 0).normal(0.0, 1.0, 20_000))
    assert redrawn                                         # the fallback really ran


def test_values_before_any_block_makes_them_in_order():
    stream = NormalStream(Stream(6, 0), 3000, 0.0, 1.0, 256)
    assert np.array_equal(stream.values(1000, 1100), sequential(6, 0).normal(0, 1, 3000)[1000:1100])


def test_scaling_falls_back_to_numpy_where_it_rounds_differently(monkeypatch):
    monkeypatch.setattr(NormalStream, "_scaling_matches_numpy", lambda self: False)
    stream = NormalStream(Stream(8, 0), 2000, 0.5, 3.0, 128)
    expected = sequential(8, 0).normal(0.5, 3.0, 2000)
    assert np.array_equal(made_on_the_pool(stream), expected)
    assert np.array_equal(stream.values(300, 700), expected[300:700])


def test_minus_zero_becomes_zero_as_numpy_adds_the_mean():
    stream = NormalStream(Stream(1, 0), 10, 0.0, 1.0)
    z = np.array([-0.0, 1.5])
    assert np.signbit(stream._scaled(z)).tolist() == [False, False]


# ---------------------------------------------------------------- inputs, block by block

def buffer(dtype: str, n: int, **init) -> BufferArg:
    kind = init.pop("kind", "random")
    return BufferArg("x", T[dtype], (n,), Init(kind, **init))


@pytest.mark.parametrize("dtype, init, expected", [
    ("fp32", {"seed": 3}, lambda g, n: g.uniform(-1, 1, n).astype(np.float32)),
    ("fp16", {"seed": 3, "low": 0.0, "high": 8.0},
     lambda g, n: g.uniform(0, 8, n).astype(np.float16)),
    ("fp32", {"seed": 4, "distribution": "normal", "mean": 2.0, "std": 0.5},
     lambda g, n: g.normal(2.0, 0.5, n).astype(np.float32)),
    ("i16", {"seed": 4, "distribution": "normal", "std": 20.0},
     lambda g, n: np.rint(np.clip(g.normal(0, 20.0, n), -32768, 32767)).astype(np.int16)),
    ("i32", {"seed": 5}, lambda g, n: g.integers(-8, 8, n, dtype=np.int32)),
    ("u8", {"seed": 5, "low": 3, "high": 200}, lambda g, n: g.integers(3, 200, n, dtype=np.uint8)),
])
def test_inputs_made_in_small_blocks_are_the_one_call_draw(monkeypatch, dtype, init, expected):
    monkeypatch.setattr(hostdata, "CHUNK", 97)
    n = 5000
    values = input_values(buffer(dtype, n, **init))
    made = values.whole()
    assert np.array_equal(made, expected(sequential(init["seed"], 0), n))
    assert np.array_equal(values.values(1234, 4321), made[1234:4321])
    assert np.array_equal(make_host_array(buffer(dtype, n, **init)), made)   # every run


def test_normal_tails_clip_only_when_they_can_reach_the_range(monkeypatch):
    monkeypatch.setattr(hostdata, "NORMAL_SIGMAS", 1.0)
    a = make_host_array(buffer("i8", 5000, seed=2, distribution="normal", std=100.0))
    expected = np.rint(np.clip(sequential(2, 0).normal(0, 100.0, 5000), -128, 127))
    assert np.array_equal(a, expected.astype(np.int8))


@pytest.mark.parametrize("dtype, kind, value, pattern", [
    ("fp32", "zeros", None, b"\0\0\0\0"),
    ("fp32", "ones", None, np.float32(1).tobytes()),
    ("fp16", "fill", -2.5, np.float16(-2.5).tobytes()),
    ("i8", "fill", -3, b"\xfd"),
    ("fp64", "fill", 1.0, None),                    # 8 bytes: no memset writes it
])
def test_constant_inputs_say_their_pattern(dtype, kind, value, pattern):
    values = input_values(BufferArg("x", T[dtype], (10,), Init(kind, value=value)))
    assert values.pattern == pattern
    whole = values.whole()
    assert np.all(whole == whole[0]) and np.array_equal(values.values(3, 6), whole[3:6])


def test_arange_blocks_continue_the_count(monkeypatch):
    monkeypatch.setattr(hostdata, "CHUNK", 7)
    values = input_values(BufferArg("x", T["i8"], (300,), Init("arange")))
    assert np.array_equal(values.whole(), np.arange(300).astype(np.int8))
    assert values.values(250, 260).tolist() == list(np.arange(250, 260).astype(np.int8))
