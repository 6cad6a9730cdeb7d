"""Inputs drawn on the GPU, value for value the host's stream (values.py), so a
spec's data does not depend on where it was drawn.

`device_draw(buffer, index)` decides, without a GPU, whether a buffer's init can
be made by device_draws.cu and with what arguments (a `DeviceDraw`), or says why
it stays on the host (a `HostOnly` and its reason); gpu/device_data.py runs it.

- `uniform` floats (fp64, fp32, fp16, bf16): value i is `low + range * u_i`, u_i
  the (i+1)-th draw of the PCG64: each thread jumps to its first value and then
  by the grid's size, as pcgstream's blocks do.
- `normal` (floats and integers): NumPy's ziggurat takes one LCG step per value
  ~98% of the time and more on a rejection, so where value i starts is known
  only once the values before it are drawn. The steps are cut in segments of
  SEGMENT steps; pass 1 draws each segment from its own first step and keeps
  how many values began in it, where the next begins and where its first few
  values began. A draw started at an arbitrary step falls into step with the
  true stream within a few values, so the true stream's first value in segment
  j (where segment j - 1's true draw ended) is one of those first starts: then
  segment j's true count and exit follow (`stitch`). A segment where it is not
  (never seen) is drawn again from its true start, and the next checked
  against that. Pass 2 draws every segment again from its true start into the
  output at its values' flat indices. The wedge test's exp() is the device's;
  where its two sides come within 4 ulp (about once in 10**13 values) the
  buffer is drawn on the host instead, so the values never depend on it.
- random integers: NumPy's bounded integers take 64, 32, 16 or 8-bit pieces
  of the draws in order, and Lemire's method keeps or rejects each piece by
  itself, so value i is the i-th kept piece: pass 1 counts the kept pieces of
  each segment, pass 2 writes them at the offsets the counts add up to (one
  pass when no piece is ever rejected: the whole range, a power of two).
- `arange`, and fills of 8-byte elements (smaller ones are a memset already).

Left on the host, each with its reason: `file:` inputs (read from disk), fp8
dtypes (their rounding is ml_dtypes' or Triton's), and a NumPy whose
`loc + scale * z` is fused (pcgstream checks it on a sample).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..specfile.model import DEFAULT_UNIFORM, BufferArg
from .pcgstream import NormalStream, Stream
from .values import _below_int_max, default_seed, finite_range, input_values

SOURCE = Path(__file__).with_name("device_draws.cu")
COMMON = Path(__file__).with_name("device_common.cu")
SEGMENT = 4096                      # LCG steps per normal segment (pass 1's unit of work)
KEEP = 8                            # starts kept per segment (ZIG_KEEP in the source)
INT_SEGMENT = 1 << 14               # pieces per bounded-integer segment (a multiple of 64)
_STEPS_PER_NORMAL = 1.02204         # pcgstream's measured rate

# The source's type codes (the enum in device_draws.cu).
TYPE_CODES = {"fp64": 0, "fp32": 1, "fp16": 2, "bf16": 3, "i8": 4, "i16": 5, "i32": 6,
              "i64": 7, "u8": 8, "u16": 9, "u32": 10, "u64": 11, "i1": 12, "u1": 12}


@dataclass(frozen=True)
class HostOnly:
    """This input (or check, device_check_source.py) stays on the host; `reason`
    says why."""
    reason: str


@dataclass(frozen=True)
class DeviceDraw:
    """What device_draws.cu makes of one buffer: `kind` is "uniform", "normal",
    "integers", "arange" or "fill8" (a 1, 2 or 4-byte fill stays a driver
    memset); `args` the kernel's scalars after the output pointer and count."""
    kind: str
    count: int
    type_code: int
    args: tuple = ()
    state: tuple[int, int, int, int] = (0, 0, 0, 0)     # PCG64 state and inc, hi and lo words
    clip: tuple[float, float] | None = None             # normal: the range draws saturate to
    loc: float = 0.0
    scale: float = 1.0


def device_draw(buffer: BufferArg, index: int = 0, values=None) -> DeviceDraw | HostOnly:
    """How `buffer`'s input is made on the device, or why it is not. The init is
    checked first by the host's own rules (values.input_values: a SpecError for an
    init the dtype cannot hold), so both paths refuse the same specs; `values`:
    the buffer's InputValues when already made (so checked)."""
    init, dtype = buffer.init, buffer.dtype
    if values is None:
        values = input_values(buffer, index)     # draws nothing but a random integer buffer
    if init.kind == "file":
        return HostOnly("a file: input is read on the host")
    if init.kind in ("zeros", "ones", "fill") and values.pattern is not None:
        return HostOnly("a fill of 1, 2 or 4-byte elements is a driver memset already")
    if dtype.name not in TYPE_CODES:
        return HostOnly(f"{dtype.name} values are rounded on the host (ml_dtypes / Triton's fp8)")
    code = TYPE_CODES[dtype.name]
    if init.kind in ("zeros", "ones", "fill"):
        one = values.values(0, 1) if buffer.numel else np.zeros(1, dtype.numpy_dtype())
        return DeviceDraw("fill8", buffer.numel, code, (int(one.view(np.uint64)[0]),))
    if init.kind == "arange":
        return DeviceDraw("arange", buffer.numel, code, (0,))
    seed = default_seed(buffer.name) if init.seed is None else init.seed
    state = _state_words(Stream(seed, index))
    if init.distribution == "normal":
        if _found_tables() is None:
            return HostOnly("the ziggurat's tables were not found in this NumPy's binary")
        if values._normal is None:          # values made whole already (a worker's, ahead)
            values = input_values(buffer, index)
        return _normal(buffer, values, code, state)
    if dtype.kind != "float":
        return _integers(buffer, code, state)
    default_lo, default_hi = DEFAULT_UNIFORM[dtype.kind]
    low = default_lo if init.low is None else init.low
    high = default_hi if init.high is None else init.high
    return DeviceDraw("uniform", buffer.numel, code, (float(low), float(high) - float(low), 0),
                      state)


def _normal(buffer: BufferArg, values, code: int, state) -> DeviceDraw | HostOnly:
    init, dtype = buffer.init, buffer.dtype
    stream: NormalStream = values._normal
    if stream._numpy_post:
        return HostOnly("this NumPy fuses loc + scale * z (pcgstream found it on a sample)")
    lo, hi = finite_range(dtype)
    top = hi if dtype.kind == "float" else _below_int_max(dtype)
    # values.py clips only where a draw could reach the range's ends (within 16 std it cannot)
    clip = not (lo <= init.mean - 16 * init.std and init.mean + 16 * init.std <= top)
    return DeviceDraw("normal", buffer.numel, code, (), state, (lo, top) if clip else None,
                      float(init.mean), float(init.std))


def _integers(buffer: BufferArg, code: int, state) -> DeviceDraw:
    """NumPy's Generator.integers(low, high) as device_draws.cu's bounded integers:
    args (unit_bits, mode, off, rng_excl, threshold), as _bounded_integers has them."""
    init, dtype = buffer.init, buffer.dtype
    default_lo, default_hi = DEFAULT_UNIFORM[dtype.kind]
    low = default_lo if init.low is None else init.low
    high = default_hi if init.high is None else init.high
    first, stop = math.ceil(low), math.ceil(high)
    bits = 8 * dtype.size               # i1 / u1 are int8 / uint8 on the host: 8-bit pieces
    rng = (stop - 1 - first) % (1 << bits)
    off = first % (1 << 64)
    unit = 32 if bits == 64 and rng <= 0xFFFFFFFF else bits
    if rng == 0:
        mode, threshold = 2, 0
    elif rng == (1 << unit) - 1:
        mode, threshold = 1, 0
    else:
        mode, threshold = 0, ((1 << unit) - (rng + 1)) % (rng + 1)
    return DeviceDraw("integers", buffer.numel, code, (unit, mode, off, rng + 1, threshold),
                      state)


def integer_layout(count: int, unit_bits: int, threshold: int,
                   run: Callable[[int], np.ndarray]) -> np.ndarray | None:
    """The output offset of each segment of INT_SEGMENT pieces (one more at the
    end), from pass 1's counts `run(segments)`; None when every piece is kept
    (segment k's values are then k * INT_SEGMENT onwards)."""
    if threshold == 0:
        return None
    p = threshold / 2.0 ** unit_bits
    pieces = count / (1 - p) + 8 * math.sqrt(count * p) / (1 - p) + 64
    segments = max(1, math.ceil(pieces / INT_SEGMENT))
    while True:
        counts = run(segments).astype(np.uint64)
        offsets = np.zeros(segments + 1, dtype=np.uint64)
        np.cumsum(counts, out=offsets[1:])
        if int(offsets[-1]) >= count:
            return offsets
        segments *= 2                       # never seen: the margin is 8 sigma


def _state_words(stream: Stream) -> tuple[int, int, int, int]:
    state = stream.start["state"]
    s, inc = state["state"], state["inc"]
    mask = (1 << 64) - 1
    return s >> 64, s & mask, inc >> 64, inc & mask


# ---------------------------------------------------------------- normals: stitching the segments

@dataclass
class Segments:
    """Pass 1's record of segments first .. first + len - 1 (device_draws.cu)."""
    counts: np.ndarray          # uint32: values that began in the segment
    exits: np.ndarray           # uint64: the step where the value after them begins
    kept: np.ndarray            # uint16 (segments, KEEP): where its first values began
    unsure: int = 0


@dataclass
class NormalLayout:
    """Where each segment's values go: pass 2 draws segment k from step starts[k]
    into flat indices offsets[k] .. offsets[k + 1] - 1."""
    starts: np.ndarray          # uint64
    offsets: np.ndarray         # uint64, one longer
    redrawn: list[int] = field(default_factory=list)    # segments drawn again from their true start
    unsure: int = 0


def segments_for(count: int, seg_len: int = SEGMENT) -> int:
    """Segments that surely hold `count` values' steps (the rate plus 8 sigma)."""
    steps = count * _STEPS_PER_NORMAL + 8 * math.sqrt(0.04 * count) + 64
    return max(1, math.ceil(steps / seg_len) + 1)


def stitch(count: int, run: Callable[[int, int, int | None], Segments],
           seg_len: int = SEGMENT) -> NormalLayout:
    """The layout of `count` normals from pass 1. `run(segments, first, start)`
    draws pass 1 for segments first .. first + segments - 1 (from `start`, when
    given, instead of the segment's own first step)."""
    total = segments_for(count, seg_len)
    seg = run(total, 0, None)
    counts, exits = seg.counts.astype(np.int64), seg.exits.astype(np.uint64)
    kept, unsure = seg.kept.astype(np.int64), seg.unsure
    redrawn: list[int] = []
    starts = np.arange(total, dtype=np.uint64) * np.uint64(seg_len)
    skip = np.zeros(total, dtype=np.int64)      # values of segment j's own draw before the true one
    j = 1
    while True:
        entry = exits[j - 1:total - 1] - starts[j:total]     # the true start, past each segment's
        hit = kept[j:total] == entry.astype(np.int64)[:, None]
        found = hit.any(axis=1)
        skip[j:total] = np.where(found, hit.argmax(axis=1), 0)
        bad = np.flatnonzero(~found)
        good_until = total if bad.size == 0 else j + int(bad[0])
        # segments after a miss are judged against an exit that may still change
        if good_until == total:
            break
        m = good_until
        again = run(1, m, int(exits[m - 1]))
        counts[m], exits[m], kept[m] = int(again.counts[0]), again.exits[0], again.kept[0]
        starts[m], skip[m] = exits[m - 1], 0
        unsure += again.unsure
        redrawn.append(m)
        j = m + 1
        if j >= total:
            break
    starts = np.concatenate([starts[:1], exits[:-1]]).astype(np.uint64)
    true_counts = counts - skip
    offsets = np.zeros(total + 1, dtype=np.uint64)
    np.cumsum(true_counts, out=offsets[1:])
    if int(offsets[-1]) < count:            # never seen: the margin is 8 sigma
        raise RuntimeError(f"{total} segments hold {int(offsets[-1])} normals, not {count}")
    return NormalLayout(starts, offsets, redrawn, unsure)


# ---------------------------------------------------------------- the source

@functools.lru_cache(maxsize=1)
def _found_tables():
    """ziggurat_tables(), or None where they cannot be found (a NumPy built
    another way): normals are then the host's."""
    try:
        return ziggurat_tables()
    except (RuntimeError, OSError):
        return None


@functools.lru_cache(maxsize=1)
def ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ki, wi, fi): the 256-entry tables of the installed NumPy's normal ziggurat,
    read from its own binary (they are data there) and checked against the
    ziggurat's definition, so the device draws what this NumPy draws."""
    import numpy.random._generator as generator
    data = Path(generator.__file__).read_bytes()
    for align in range(8):
        usable = (len(data) - align) // 8 * 8
        words = np.frombuffer(data, dtype=np.uint64, count=usable // 8, offset=align)
        found = _tables_in(words)
        if found is not None:
            return found
    raise RuntimeError(f"the ziggurat's tables were not found in {generator.__file__}")


def _tables_in(words: np.ndarray):
    doubles = words.view(np.float64)
    ones = np.flatnonzero(words == np.float64(1.0).view(np.uint64))
    for at in ones:                     # fi: 1.0, then decreasing to exp(-r**2 / 2)
        fi = doubles[at:at + 256]
        if len(fi) < 256 or not (np.all(np.diff(fi) < 0) and 0 < fi[-1] < 2e-3):
            continue
        x = np.sqrt(-2 * np.log(fi[1:]))            # the layers' edges, x_1 .. x_255
        scale = 2.0 ** -52
        for w_at in _near(doubles, x[-1] * scale):  # wi ends with r / 2**52
            wi = doubles[w_at - 255:w_at + 1]
            if len(wi) == 256 and np.allclose(wi[1:], x * scale, rtol=1e-9, atol=0):
                ratio = np.floor(x[:-1] / x[1:] * 2.0 ** 52)
                zeros = np.flatnonzero(words[:-1] == 0)         # ki[1] is 0, ki[2] ~ ratio[0]
                near = np.abs(words[zeros + 1].astype(np.float64) - ratio[0]) <= ratio[0] * 1e-9
                for k_at in zeros[near]:
                    ki = words[k_at - 1:k_at + 255]
                    if (len(ki) == 256 and np.allclose(ki[2:].astype(np.float64), ratio,
                                                       rtol=1e-9)
                            and 0 < ki[0] < 2 ** 52):
                        return ki.copy(), wi.view(np.uint64).copy(), fi.view(np.uint64).copy()
    return None


def _near(doubles: np.ndarray, value: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.flatnonzero(np.abs(doubles - value) <= value * 1e-12)


@functools.lru_cache(maxsize=1)
def draws_source() -> str:
    """device_common.cu, the ziggurat's tables (zeros where they were not found:
    no normal is drawn then) and device_draws.cu."""
    zeros = np.zeros(256, dtype=np.uint64)
    ki, wi, fi = _found_tables() or (zeros, zeros, zeros)

    def table(name: str, words: np.ndarray) -> str:
        body = ",".join(f"0x{int(w):016X}ull" for w in words)
        return f"CR_TABLE u64 {name}[256] = {{{body}}};\n"
    return (COMMON.read_text() + table("ZIG_KI", ki) + table("ZIG_WI", wi)
            + table("ZIG_FI", fi) + SOURCE.read_text())
