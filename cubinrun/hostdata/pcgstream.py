"""NumPy's random streams, drawn block by block on many threads, value for value
the same as one sequential `Generator(PCG64(...))` draw.

A PCG64 is a 128-bit LCG: `advance(d)` jumps d steps (one step per 64-bit
draw) and `lcg_distance` says how many steps lie between two states.

- Uniform floats take one step per value (`next_double`), so the value at flat
  index i is drawn by a generator advanced i steps: any block, any order.
- Normals (NumPy's ziggurat) take one step per value about 98% of the time and
  more on a rejection, so where value i starts is only known once every value
  before it is drawn. `NormalStream` guesses the start of each block (from the
  steps per value measured so far, with a margin), draws from the guess, and
  aligns what it drew with the true stream: the ziggurat keeps no state besides
  the generator, so a draw started at the wrong step falls into step with the
  true sequence within a few values, and after that it draws the true values.
  Block k finds where its draw meets the first values of block k (handed on by
  block k - 1, which draws a few past its end) and takes the values from there.
  Alignment compares standard normals, 52 random bits each, 8 at a time: a
  false match would need 8 equal doubles. If the guess missed (never seen; the
  margin is 8 standard deviations), the block is drawn again from the exact
  start of the previous one, so the result never depends on luck.
  `normal(mean, std)` is `mean + std * z` in NumPy's C code; the stream checks
  on a sample that NumPy's arrays round the same way (they do where the C code
  is not compiled with fused multiply-add), else it draws `normal` itself from
  each block's exact start.
"""
from __future__ import annotations

import bisect
import math
import threading
from concurrent.futures import Future
import numpy as np

_MULT = 0x2360ED051FC65DA44385DF649FCCF645      # PCG64's LCG multiplier (pcg64.h)
_MASK = (1 << 128) - 1

NORMAL_BLOCK = 1 << 20          # values per block
_KEY = 8                        # values compared to align a block
_STEPS_PER_NORMAL = 1.02204     # measured over 4e8 values (+- 1e-5): the 256-layer ziggurat
_STEPS_VARIANCE = 0.04          # per value (measured 0.034)
_RATE_ERROR = 1e-4              # of _STEPS_PER_NORMAL, until a block has measured it
_SIGMAS = 8.0


def bit_generator(seed: int, index: int) -> np.random.PCG64:
    """The stream of a buffer: PCG64(seed) for index 0, else the seed sequence
    (seed, spawn key index), as hostdata documents."""
    if index == 0:
        return np.random.PCG64(seed)
    return np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(index,)))


def lcg_distance(start: dict, end: dict) -> int:
    """Steps from one PCG64 state to another (pcg-cpp's `distance`, bit by bit)."""
    cur, new = start["state"]["state"], end["state"]["state"]
    inc, mult = start["state"]["inc"], _MULT
    bit = distance = 0
    while cur != new:
        if (cur ^ new) >> bit & 1:
            cur = (cur * mult + inc) & _MASK
            distance |= 1 << bit
        bit += 1
        inc = ((mult + 1) * inc) & _MASK
        mult = (mult * mult) & _MASK
    return distance


class Stream:
    """A buffer's PCG64 stream at any step."""

    def __init__(self, seed: int, index: int):
        self.start = bit_generator(seed, index).state

    def at(self, step: int) -> np.random.Generator:
        bits = np.random.PCG64(0)          # no entropy to gather: the state is set next
        bits.state = self.start
        if step:
            bits.advance(step)
        return np.random.Generator(bits)

    def step_of(self, rng: np.random.Generator) -> int:
        return lcg_distance(self.start, rng.bit_generator.state)


def uniform(stream: Stream, low: float, high: float, start: int, stop: int) -> np.ndarray:
    """Values start..stop-1 of `Generator.uniform(low, high)` in float64."""
    return stream.at(start).uniform(low, high, stop - start)


class _Unaligned(Exception):
    pass


class NormalStream:
    """`Generator.normal(mean, std, n)` in float64, block by block.

    `block(k)` may run on many threads at once provided block k - 1 was started
    before it (block k waits for k - 1's hand-over: its true first values). Each
    block records the exact step its first value starts at, so `values(a, b)`
    draws any range again later."""

    def __init__(self, stream: Stream, n: int, mean: float, std: float,
                 block_size: int = NORMAL_BLOCK):
        self.stream, self.n, self.mean, self.std = stream, n, mean, std
        self.block_size = block_size
        self.blocks = -(-n // block_size)
        self._lock = threading.Lock()
        self._in_order = threading.Lock()
        self._starts: dict[int, int] = {}             # block -> step of its first value
        self._known: list[tuple[int, int]] = [(0, 0)]   # sorted (value index, its step)
        self._keys: dict[int, Future] = {}
        self._numpy_post = not self._scaling_matches_numpy()

    # -- values

    def block(self, k: int) -> np.ndarray:
        """Values k*B .. (k+1)*B - 1 (fewer in the last block), a new array."""
        count = self._count(k)
        try:
            with self._lock:
                start = self._starts.get(k)
            if start is not None:           # made before: its start is exact
                z = self.stream.at(start).standard_normal(count + self._key_len(k))
            else:
                z, start = self._aligned(k, count)
            self._hand_over(k, z[count:])
        except BaseException as exc:
            if k + 1 < self.blocks:
                _settle(self._key(k + 1), exc)
            raise
        return self._post(z[:count], start)

    def values(self, start: int, stop: int) -> np.ndarray:
        """Values start..stop-1 (any range) as a new array."""
        k = start // self.block_size
        with self._lock:
            step = self._starts.get(k)
        if step is None:                    # its blocks were never made: make them in order
            with self._in_order:
                for j in range(k + 1):
                    if j not in self._starts:
                        self.block(j)
            step = self._starts[k]
        rng = self.stream.at(step)
        skip = start - k * self.block_size
        if skip:
            rng.standard_normal(skip)
        if self._numpy_post:
            return rng.normal(self.mean, self.std, stop - start)
        return self._scaled(rng.standard_normal(stop - start))

    # -- alignment

    def _aligned(self, k: int, count: int) -> tuple[np.ndarray, int]:
        first = k * self.block_size
        lowest, guess, margin = self._guess(first)
        begin = max(lowest, guess - margin)
        rng = self.stream.at(begin)
        # from `begin` to the block's true start there is at most one value per step
        z = rng.standard_normal(max(guess + margin - begin, 0) + count + self._key_len(k))
        end_step = self.stream.step_of(rng)
        offset = 0
        if k:
            key = self._key(k).result()
            offset = _find(z, key, len(z) - count - self._key_len(k))
            if offset is None:
                return self._redrawn(k, count)
        start = begin
        if offset:                          # the step where z[offset] starts
            again = self.stream.at(begin)
            again.standard_normal(offset)
            start = self.stream.step_of(again)
        with self._lock:
            self._starts[k] = start
            bisect.insort(self._known, (first, start))
            bisect.insort(self._known, (first - offset + len(z), end_step))
        return z[offset:], start

    def _redrawn(self, k: int, count: int) -> tuple[np.ndarray, int]:
        """The guess missed: draw on from the exact start of block k - 1, which it
        recorded before handing over."""
        rng = self.stream.at(self._starts[k - 1])
        rng.standard_normal(self._count(k - 1))
        start = self.stream.step_of(rng)
        with self._lock:
            self._starts[k] = start
            bisect.insort(self._known, (k * self.block_size, start))
        return rng.standard_normal(count + self._key_len(k)), start

    def _guess(self, first: int) -> tuple[int, int, int]:
        """(lowest possible, likely, margin): steps where value `first` starts."""
        with self._lock:
            index, step = self._known[bisect.bisect_right(self._known, (first, math.inf)) - 1]
        ahead = first - index
        if index >= NORMAL_BLOCK:           # the rate measured so far
            rate, rate_error = step / index, math.sqrt(_STEPS_VARIANCE / index)
        else:
            rate, rate_error = _STEPS_PER_NORMAL, _RATE_ERROR
        spread = math.sqrt(_STEPS_VARIANCE * ahead) + rate_error * ahead
        return step + ahead, step + round(ahead * rate), int(_SIGMAS * spread) + 64

    def _hand_over(self, k: int, tail: np.ndarray) -> None:
        if k + 1 < self.blocks:
            _settle(self._key(k + 1), tail[:self._key_len(k)].copy())

    def _key(self, k: int) -> Future:
        with self._lock:
            return self._keys.setdefault(k, Future())

    def _key_len(self, k: int) -> int:
        """Values block k draws past its end for block k + 1 to align on."""
        return min(_KEY, self.n - (k + 1) * self.block_size) if k + 1 < self.blocks else 0

    def _count(self, k: int) -> int:
        return min(self.block_size, self.n - k * self.block_size)

    # -- normal(mean, std) from standard normals

    def _post(self, z: np.ndarray, start: int) -> np.ndarray:
        if self._numpy_post:
            return self.stream.at(start).normal(self.mean, self.std, len(z))
        return self._scaled(z)

    def _scaled(self, z: np.ndarray) -> np.ndarray:
        """NumPy's `loc + scale * z`, rounded twice as its C code does (in place;
        times 1 is exact, plus 0 is not: it turns -0.0 into 0.0)."""
        if self.std != 1.0:
            z *= self.std
        z += self.mean
        return z

    def _scaling_matches_numpy(self) -> bool:
        sample = self.stream.at(0).normal(self.mean, self.std, 256)
        return np.array_equal(self._scaled(self.stream.at(0).standard_normal(256)), sample)


def _find(z: np.ndarray, key: np.ndarray, limit: int) -> int | None:
    """The first i <= limit with z[i:i+len(key)] == key."""
    for i in np.flatnonzero(z[:max(limit + 1, 0)] == key[0]):
        if np.array_equal(z[i:i + len(key)], key):
            return int(i)
    return None


def _settle(future: Future, outcome) -> None:
    """Give a hand-over its value or error once (a block made again gives it again)."""
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
