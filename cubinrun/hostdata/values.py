"""Host arrays for the spec's buffers: made from `init`, saved as `.npy`, read as float64.

Every array is C-contiguous, of the buffer's shape, in the host dtype of its
element type (`ElementType.numpy_dtype()`; ml_dtypes for bf16 / fp8e4nv / fp8e5).

Inits
- `zeros`, `ones`: 0 and 1 in the dtype.
- `arange`: 0, 1, 2, ... in flat (C) order. Integer dtypes wrap modulo 2**bits
  (i8 goes 126, 127, -128, ...); booleans alternate 0, 1. Float dtypes round each
  value as the dtype does (fp16 is exact up to 2048, bf16 up to 256, fp8e4nv up
  to 16; past that, ties go to even), and an arange whose last value would
  overflow the dtype's finite range is a SpecError, never a row of infinities.
- `random`: uniform with per-kind defaults: floats in [-1, 1), signed integers
  in [-8, 8), unsigned in [0, 16), booleans 0 or 1.
  `{random: uniform, low, high}`: floats uniform in [low, high) (after rounding
  to the dtype a value may equal `high`); integers uniform over the whole
  numbers k with low <= k < high. The bounds must lie in the dtype's range.
  `{random: normal, mean, std}`: floats drawn N(mean, std**2); integer and
  boolean dtypes round the draws to the nearest integer (ties to even). The
  interval mean +- 6 std must lie in the dtype's range (SpecError otherwise,
  e.g. the default N(0, 1) on fp8e4b15 or on an unsigned dtype); the rare
  draws beyond it (about 2 in 10**9) saturate to the range's ends.
  Draws are made in float64 and then rounded to the dtype (round to nearest
  even, ml_dtypes for bf16 / fp8); integers are drawn directly.
- `{fill: V}`: V in the dtype. Integer dtypes need an integer in range (as
  scalar args, 2.0 is not an integer);
  float dtypes round V (fp16: 0.1 -> 0.0999755859375) but a finite V that
  overflows the dtype is a SpecError, and NaN / inf only where the dtype has
  them (fp8e4nv has NaN but no inf, fp8e4b15 has neither).
- `{file: PATH.npy}`: loaded with allow_pickle=False. The shape must equal the
  buffer's. The dtype must be the host dtype, a safe NumPy cast to it, or any
  numeric dtype whose values all convert exactly (float32 values into a bf16
  buffer, whole float64 numbers into i32). A `.npy` of anonymous raw bytes of
  the element's size (what np.save writes for ml_dtypes arrays) is taken as
  the dtype's bits; for fp8e4b15 a uint8 file is taken as raw bits.

Seeds
A `seed` makes the data the same on every run and machine: index 0 draws from
`numpy.random.Generator(PCG64(seed))`, so `default_rng(seed).uniform(-1, 1, n)`
rounded to the dtype reproduces a float buffer. Without a seed the seed is
`default_seed(name)`, taken from a SHA-256 of the buffer's name: reruns repeat,
two unseeded buffers differ. `index` > 0 asks for another, independent random
array for the same buffer (seed sequence (seed, spawn key index)); other inits
ignore it.

Blocks
`input_values` gives a buffer's input as `InputValues`, made CHUNK elements at a
time on the worker threads (threads.py), value for value the arrays above:
uniform floats jump the PCG64 to each block's first value, normal blocks align
on the true stream (pcgstream.NormalStream), integers are drawn in the one call
above (NumPy's bounded integers keep buffered bits between values), when first
read, and kept.
The check reads any range again by the same means instead of keeping inputs.

fp8e4b15 (Triton's `tl.float8e4b15`), checked in triton-lang/triton
python/triton/language/extra/cuda/utils.py (convert_fp8e4b15_to_float16 and
convert_float16_to_fp8e4b15, the NVIDIA codegen for this type):
- Layout s.eeee.mmm with exponent bias 15. The upcast moves the byte into an
  fp16 as s.0eeee.mmm0000000, so values are exactly fp16's: exponent 0 is
  subnormal (m * 2**-17), there is no inf and no NaN, all 256 patterns are
  finite, the largest is 0x7f = 1.875.
- Triton's downcast (fp16 -> fp8e4b15) clamps magnitudes to 1.75 (0x7e), turns
  NaN and inf into +-1.75, and rounds ties away from zero; fp32 is first cut
  to fp16 toward zero. Older comments in Triton's lowering that speak of
  infinities and NaNs for this type do not match that code.
- Host arrays hold the raw bytes (uint8). `encode_fp8e4b15` rounds to nearest
  even over all 256 patterns (max 1.875) and refuses NaN, inf and overflow;
  so encoded bytes can differ from a Triton kernel's own stores on exact ties
  and between 1.75 and 1.875.
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..dtypes import ElementType
from ..errors import SpecError, UsageError, shorten
from ..files import OutputFile, output_problem
from ..limits import MAX_NPY_HEADER_BYTES
from .threads import run_all, run_all_in_background
from .pcgstream import NormalStream, Stream, uniform
from ..specfile.model import DEFAULT_UNIFORM, NORMAL_SIGMAS, BufferArg, Init
from ..specfile.scalars import check_scalar_value

CHUNK = 1 << 18                     # elements per block made at a time (and checked)
FP8E4B15_MAX = 1.875


# ml_dtypes' types have no .npy name: np.save writes them as anonymous bytes.
_NON_NUMPY = ("bf16", "fp8e4nv", "fp8e5", "fp8e4b15")


# ---------------------------------------------------------------- fp8e4b15

def decode_fp8e4b15(bits: np.ndarray) -> np.ndarray:
    """Raw fp8e4b15 bytes -> float32, exactly as Triton's upcast: the byte becomes
    the fp16 s.0eeee.mmm0000000."""
    b = np.asarray(bits, dtype=np.uint8).astype(np.uint16)
    half = ((b & 0x80) << 8) | ((b & 0x7F) << 7)
    return half.view(np.float16).astype(np.float32)


def encode_fp8e4b15_masked(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """Round to the nearest fp8e4b15 (ties to even). Returns (bits, representable):
    NaN, inf and magnitudes that round past 1.875 are not representable and
    their bits are meaningless."""
    x = np.asarray(values, dtype=np.float64)
    sign = np.where(np.signbit(x), 0x80, 0).astype(np.uint8)
    with np.errstate(invalid="ignore"):
        a = np.abs(x)
        finite = np.isfinite(a)
        a = np.where(finite, a, 0.0)
        _, exp2 = np.frexp(a)                         # a = f * 2**exp2, f in [0.5, 1)
        # One step is 2**(binade - 3), and 2**-17 below the normal range (2**-14).
        step_exp = np.maximum(exp2 - 1, -14) - 3
        q = np.rint(np.ldexp(a, -step_exp))           # whole steps, ties to even
        rounded = np.ldexp(q, step_exp)
        ok = finite & (rounded <= FP8E4B15_MAX)
        rounded = np.where(ok, rounded, 0.0)
        _, exp2 = np.frexp(rounded)
        binade = exp2 - 1
        normal = rounded >= 2.0 ** -14
        e = np.where(normal, binade + 15, 0)
        m = np.where(normal, np.ldexp(rounded, 3 - binade) - 8, np.ldexp(rounded, 17))
    bits = sign | (e.astype(np.uint8) << 3) | m.astype(np.uint8)
    return bits, ok


def encode_fp8e4b15(values: Any) -> np.ndarray:
    """Round to the nearest fp8e4b15 (ties to even) as raw uint8 bytes;
    ValueError for NaN, inf or a magnitude past 1.875."""
    bits, ok = encode_fp8e4b15_masked(values)
    if not ok.all():
        bad = np.asarray(values, dtype=np.float64).reshape(-1)[np.argmin(ok.reshape(-1))]
        raise ValueError(f"{float(bad)!r} is not representable in fp8e4b15 "
                         f"(finite only, magnitude at most {FP8E4B15_MAX})")
    return bits


# ---------------------------------------------------------------- conversions

def cast_floats(values: Any, dtype: ElementType) -> np.ndarray:
    """Float values rounded (to nearest even) into a float dtype's host array."""
    if dtype.name == "fp8e4b15":
        return encode_fp8e4b15(values)
    return np.asarray(values).astype(dtype.numpy_dtype())


def to_float64(array: np.ndarray, dtype: ElementType) -> np.ndarray:
    """The host array's values as float64: exact for every float dtype and for
    integers up to 2**53 (beyond, 64-bit integers round)."""
    if dtype.name == "fp8e4b15":
        return decode_fp8e4b15(array).astype(np.float64)
    return np.asarray(array).astype(np.float64)


def finite_range(dtype: ElementType) -> tuple[float, float]:
    """The smallest and largest value a dtype holds (integers: its whole range)."""
    if dtype.kind != "float":
        lo, hi = dtype.int_range()
        return float(lo), float(hi)
    if dtype.name == "fp8e4b15":
        return -FP8E4B15_MAX, FP8E4B15_MAX
    if dtype.name in _NON_NUMPY:
        import ml_dtypes
        biggest = float(ml_dtypes.finfo(dtype.numpy_dtype()).max)
    else:                       # NumPy's own: no need to import ml_dtypes (~0.4 s)
        biggest = float(np.finfo(dtype.numpy_dtype()).max)
    return -biggest, biggest


def default_seed(name: str) -> int:
    """The seed of a buffer whose init gives none: stable across runs and machines."""
    return int.from_bytes(hashlib.sha256(f"cubinrun:{name}".encode()).digest()[:8], "little")


def save_array(array: np.ndarray, path: str | Path, dtype: ElementType | None = None) -> Path:
    """Write `array` as .npy at `path`, creating folders. bf16 and fp8 buffers
    (fp8e4b15 only when `dtype` says so, its host array being uint8) are saved
    as float32 values, exact for all of them, because .npy has no name for
    these types and would store anonymous bytes."""
    array = np.asarray(array, order="C")              # keeps 0-d arrays 0-d
    with NpyWriter(path, array.shape, array.dtype, dtype) as writer:
        writer.write(array.reshape(-1))
    return Path(path)


class NpyWriter:
    """A .npy written block by block in flat order: the bytes `np.save` writes for
    the whole array (bf16 and fp8 as float32, as `save_array` says)."""

    def __init__(self, path: str | Path, shape: tuple[int, ...], host: np.dtype,
                 dtype: ElementType | None = None):
        self.path, self.dtype = Path(path), dtype
        raw = dtype is None and host.kind == "V"                # an ml_dtypes array
        self.as_float32 = raw or (dtype is not None and dtype.name in _NON_NUMPY)
        stored = np.dtype(np.float32) if self.as_float32 else np.dtype(host)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if problem := output_problem(self.path):
            raise UsageError(f"save: {self.path} {problem}")
        self._out = OutputFile(self.path)       # takes the name when complete, never via a link
        self._file = self._out.file
        header = {"descr": np.lib.format.dtype_to_descr(stored), "fortran_order": False,
                  "shape": tuple(shape)}
        np.lib.format.write_array_header_1_0(self._file, header)

    def write(self, block: np.ndarray) -> None:
        if self.as_float32:
            block = (block.astype(np.float32) if self.dtype is None
                     else to_float64(block, self.dtype).astype(np.float32))
        try:
            self._file.write(memoryview(np.ascontiguousarray(block)).cast("B"))
        except OSError as exc:
            raise self._cannot_write(exc) from None

    def close(self) -> None:
        """The file complete: it takes its name."""
        try:
            self._out.commit()
        except OSError as exc:
            raise self._cannot_write(exc) from None

    def _cannot_write(self, error: OSError) -> UsageError:
        """A full disk: one line naming the field and the file (exit 2)."""
        return UsageError(f"cannot write save: {self.path}: {error.strerror or error}")

    def abort(self) -> None:
        """Nothing written: the file named before, if any, is left as it was."""
        self._out.abort()

    def __enter__(self) -> "NpyWriter":
        return self

    def __exit__(self, kind, *_) -> None:
        self.close() if kind is None else self.abort()


# ---------------------------------------------------------------- input values

class InputValues:
    """A buffer's input, made block by block so no step needs the whole array.

    `block(k)` gives flat elements k*B .. (k+1)*B - 1 (B = `block_size`) and may
    run on many threads, started in order of k; `values(a, b)` gives any flat
    range, once the blocks holding it were made (the check reads inputs again
    this way instead of keeping them); `whole()` is the array. `pattern` is the
    bytes of one element when every element holds it and a memset can write it
    (1, 2 or 4 bytes). Made by `input_values`, which checks the init first, from
    one of: `draw(a, b)` (any range, any thread), `whole` (an array kept), or a
    `normal` stream and the `post` that rounds its float64 values to the dtype."""

    def __init__(self, buffer: BufferArg, draw: Callable[[int, int], np.ndarray] | None,
                 pattern: bytes | None = None, whole: np.ndarray | None = None,
                 normal: NormalStream | None = None,
                 post: Callable[[np.ndarray], np.ndarray] | None = None):
        self.buffer = buffer
        self.dtype = buffer.dtype
        self.host = buffer.dtype.numpy_dtype()
        self.shape = buffer.shape
        self.count = buffer.numel
        self.pattern = pattern
        self._draw, self._whole, self._normal, self._post = draw, whole, normal, post
        self.block_size = normal.block_size if normal else CHUNK
        self.blocks = -(-self.count // self.block_size)

    def block(self, k: int) -> np.ndarray:
        if self._normal is not None:
            return self._post(self._normal.block(k))
        start = k * self.block_size
        return self.values(start, min(self.count, start + self.block_size))

    def values(self, start: int, stop: int) -> np.ndarray:
        if self._whole is not None:
            return self._whole.reshape(-1)[start:stop]
        if self._normal is not None:
            return self._post(self._normal.values(start, stop))
        return self._draw(start, stop)

    @property
    def nbytes(self) -> int:
        return self.count * self.host.itemsize

    def made(self) -> InputValues:
        """The same input with its values made now, on the background threads
        (a worker getting ready while another process times a kernel:
        pipeline/session.on_host); a memset's pattern is left as it is."""
        if self.pattern is not None or self._whole is not None:
            return self
        return InputValues(self.buffer, None, whole=self._fill(run_all_in_background))

    def whole(self) -> np.ndarray:
        if self._whole is not None:
            return self._whole
        return self._fill(run_all)

    def _fill(self, run: Callable) -> np.ndarray:
        out = np.empty(self.shape, dtype=self.host)
        flat = out.reshape(-1)

        def fill(k: int) -> None:
            flat[k * self.block_size:(k + 1) * self.block_size] = self.block(k)
        run([lambda k=k: fill(k) for k in range(self.blocks)])
        return out


def input_values(buffer: BufferArg, index: int = 0) -> InputValues:
    """The buffer's input as `InputValues` (see the module docstring); SpecError
    for an init the dtype cannot hold, before anything is made."""
    init, dtype = buffer.init, buffer.dtype
    field = f"{buffer.section}.{buffer.name}.init"
    if init.kind == "zeros":
        return _filled(buffer, np.zeros((), dtype=dtype.numpy_dtype()))
    if init.kind == "ones":
        return _filled(buffer, _scalar_in(dtype, 1, field))
    if init.kind == "fill":
        return _filled(buffer, _scalar_in(dtype, init.value, f"{field}.fill"))
    if init.kind == "arange":
        return InputValues(buffer, _arange(buffer, field))
    if init.kind == "random":
        seed = default_seed(buffer.name) if init.seed is None else init.seed
        return _random(buffer, init, Stream(seed, index), field)
    if init.kind == "file":
        whole = load_for(init.path, dtype, buffer.shape, f"{field}.file")
        return InputValues(buffer, None, whole=whole)
    raise AssertionError(f"unknown init {init.kind!r}")


def make_host_array(buffer: BufferArg, index: int = 0) -> np.ndarray:
    """The buffer's input array, made from its init (see the module docstring)."""
    return input_values(buffer, index).whole()


def _filled(buffer: BufferArg, one: np.ndarray) -> InputValues:
    pattern = one.tobytes() if one.itemsize in (1, 2, 4) else None
    return InputValues(buffer, lambda a, b: np.full(b - a, one, dtype=one.dtype), pattern)


def _scalar_in(dtype: ElementType, value: Any, field: str) -> np.ndarray:
    """`value` as a 0-d array of the dtype; SpecError if it does not fit."""
    if dtype.kind != "float":           # as scalar args: 2.0 is not silently an integer
        try:
            number = check_scalar_value(dtype, value)
        except SpecError as exc:
            raise SpecError(exc.message, field=field) from None
        return np.array(number, dtype=dtype.numpy_dtype())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{dtype.name} needs a number, got {value!r}", field=field)
    try:
        x = float(value)
    except OverflowError:
        raise SpecError(f"{value} overflows {dtype.name}", field=field) from None
    if dtype.name == "fp8e4b15":
        bits, ok = encode_fp8e4b15_masked(np.array(x))
        if not ok:
            what = "overflows" if math.isfinite(x) else "is not allowed:"
            raise SpecError(f"{value} {what} fp8e4b15 (finite only, magnitude at most "
                            f"{FP8E4B15_MAX})", field=field)
        return bits
    with np.errstate(over="ignore", invalid="ignore"):
        cast = np.array(x).astype(dtype.numpy_dtype())
    stored = float(cast.astype(np.float64))
    if math.isinf(x) and stored != x:
        raise SpecError(f"{dtype.name} has no infinity", field=field)
    if math.isfinite(x) and not math.isfinite(stored):
        raise SpecError(f"{value} overflows {dtype.name} (largest finite "
                        f"{finite_range(dtype)[1]:g})", field=field)
    return cast


def _arange(buffer: BufferArg, field: str) -> Callable[[int, int], np.ndarray]:
    dtype, n = buffer.dtype, buffer.numel
    host = dtype.numpy_dtype()
    if dtype.kind == "float":
        _, hi = finite_range(dtype)
        if n and n - 1 > hi:
            raise SpecError(f"arange up to {n - 1} overflows {dtype.name} "
                            f"(largest finite {hi:g}); use a wider dtype or another init",
                            field=field)
        return lambda s, e: cast_floats(np.arange(s, e, dtype=np.float64), dtype)
    if dtype.kind == "bool":
        return lambda s, e: (np.arange(s, e, dtype=np.uint64) & 1).astype(host)
    # unsigned -> narrower casts keep the low bits: wraps
    return lambda s, e: np.arange(s, e, dtype=np.uint64).astype(host)


def _random(buffer: BufferArg, init: Init, stream: Stream, field: str) -> InputValues:
    dtype, shape = buffer.dtype, buffer.shape
    lo_range, hi_range = finite_range(dtype)
    if init.distribution == "normal":
        if not (lo_range <= init.mean - NORMAL_SIGMAS * init.std
                and init.mean + NORMAL_SIGMAS * init.std <= hi_range):
            raise SpecError(
                f"normal(mean={init.mean:g}, std={init.std:g}) does not fit {dtype.name} "
                f"[{lo_range:g}, {hi_range:g}]: mean +- {NORMAL_SIGMAS:g} std must lie inside",
                field=field)
        top = hi_range if dtype.kind == "float" else _below_int_max(dtype)
        host = dtype.numpy_dtype()
        # NumPy's normals never exceed 13.8 in magnitude (its ziggurat's tail draws
        # r - log(u) / r with u >= 2**-53), so within 16 std the clip is a no-op
        clip = not (lo_range <= init.mean - 16 * init.std and init.mean + 16 * init.std <= top)

        def post(values: np.ndarray) -> np.ndarray:
            if clip:
                np.clip(values, lo_range, top, out=values)
            if dtype.kind == "float":
                return cast_floats(values, dtype)
            return np.rint(values, out=values).astype(host)
        stream_values = NormalStream(stream, buffer.numel, init.mean, init.std, CHUNK)
        return InputValues(buffer, None, normal=stream_values, post=post)

    default_lo, default_hi = DEFAULT_UNIFORM[dtype.kind]
    low = default_lo if init.low is None else init.low
    high = default_hi if init.high is None else init.high
    if dtype.kind != "float":
        first, stop = math.ceil(low), math.ceil(high)   # whole k with low <= k < high
        if first >= stop:
            raise SpecError(f"no integer k with {low:g} <= k < {high:g}", field=field)
        if first < lo_range or stop - 1 > hi_range:
            raise SpecError(f"random integers in [{first}, {stop - 1}] do not fit "
                            f"{dtype.name} [{int(lo_range)}, {int(hi_range)}]", field=field)
        # one call, as before: NumPy's bounded integers keep buffered bits per call,
        # so blocks drawn apart would differ; these buffers are made whole, when first
        # read (a buffer the device draws itself is never made here)
        return InputValues(buffer, _drawn_whole(
            lambda: stream.at(0).integers(first, stop, size=shape, dtype=dtype.numpy_dtype())))
    if not low < high:                   # one bound given, the other a default
        raise SpecError(f"uniform [{low:g}, {high:g}) is empty: low must be below high",
                        field=field)
    if not (lo_range <= low and high <= hi_range):
        raise SpecError(f"uniform [{low:g}, {high:g}) does not fit {dtype.name} "
                        f"[{lo_range:g}, {hi_range:g}]", field=field)
    if not math.isfinite(high - low):
        raise SpecError(f"uniform [{low:g}, {high:g}) is wider than float64 can draw",
                        field=field)
    return InputValues(buffer, lambda a, b: cast_floats(uniform(stream, low, high, a, b), dtype))


def _drawn_whole(make: Callable[[], np.ndarray]) -> Callable[[int, int], np.ndarray]:
    """A draw(a, b) that makes the whole array once, on first use (any thread)."""
    import threading
    lock, made = threading.Lock(), []

    def draw(start: int, stop: int) -> np.ndarray:
        with lock:
            if not made:
                made.append(make().reshape(-1))
        return made[0][start:stop]
    return draw


def _below_int_max(dtype: ElementType) -> float:
    """The largest float64 that converts into the integer dtype (2**64 - 1 rounds up)."""
    hi = dtype.int_range()[1]
    top = float(hi)
    return top if top <= hi else float(np.nextafter(top, 0.0))


# ---------------------------------------------------------------- .npy files

def load_npy(path: Path, field: str, mmap: bool = False) -> np.ndarray:
    """np.load without pickles (memory-mapped read-only with `mmap`, so blocks are
    read as they are needed); SpecError naming the file if it cannot be read."""
    try:
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (OSError, ValueError, EOFError) as exc:
        raise SpecError(f"cannot read {path} as .npy: {exc}", field=field) from None


def check_npy(path: Path, shape: tuple[int, ...] | None, field: str,
              dtype: ElementType | None = None, against: str = "the buffer") -> None:
    """What a .npy's header says, checked before its data is read: a regular file
    whose header is readable, whose shape is `shape`, whose dtype holds numbers
    (or `dtype`'s raw elements) and whose data is all there. A header claiming
    10**13 elements is refused here, not by an allocation."""
    import os
    import stat
    name = Path(path).name
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise SpecError(f"{name} is not a regular file", field=field)
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            major, _ = np.lib.format.read_magic(f)
            read = (np.lib.format.read_array_header_1_0 if major == 1
                    else np.lib.format.read_array_header_2_0)
            found, _, kind = read(f, max_header_size=MAX_NPY_HEADER_BYTES)
            data_at = f.tell()
    except (OSError, ValueError, EOFError, SyntaxError, TypeError) as exc:
        raise SpecError(f"cannot read {name} as .npy: {shorten(str(exc))}",
                        field=field) from None
    if shape is not None and tuple(found) != tuple(shape):
        raise SpecError(f"{name} has shape {list(found)}, {against} is {list(shape)}",
                        field=field)
    raw = (dtype is not None and kind.kind == "V" and not kind.names
           and kind.itemsize == dtype.size)
    if kind.kind not in "biuf" and not raw:
        if kind.hasobject:
            raise SpecError(f"cannot read {name} as .npy: it holds Python objects, which are "
                            "not loaded (no pickles)", field=field)
        if kind.kind == "c" and dtype is not None:
            raise SpecError(f"{name} holds {kind}, which cannot be converted to {dtype.name}",
                            field=field)
        raise SpecError(f"{name} holds {shorten(str(kind))}, not numbers", field=field)
    count = 1
    for d in found:
        count *= d
    if data_at + count * kind.itemsize > size:
        raise SpecError(f"{name} is truncated: its header promises {count} elements of "
                        f"{kind.itemsize} bytes", field=field)


def check_init(buffer: BufferArg) -> None:
    """Everything input_values would refuse in `buffer`'s init, found without
    making the values (a dry run): the value or bounds are checked as for one
    element, an arange's last value against the dtype, a file's header against
    the buffer."""
    import dataclasses
    init = buffer.init
    field = f"{buffer.section}.{buffer.name}.init"
    if init.kind == "file":
        check_npy(init.path, buffer.shape, f"{field}.file", buffer.dtype)
    elif init.kind == "arange":
        _arange(buffer, field)                  # raises before making anything
    elif init.kind != "zeros":
        input_values(dataclasses.replace(buffer, shape=(1,)))  # checks; draws 1 int at most


def load_for(path: Path, dtype: ElementType, shape: tuple[int, ...], field: str) -> np.ndarray:
    """A .npy's contents as a host array of `dtype` and exactly `shape`."""
    check_npy(path, shape, field, dtype)
    values = load_npy(path, field)
    if values.shape != tuple(shape):
        raise SpecError(f"{path.name} has shape {list(values.shape)}, the buffer is "
                        f"{list(shape)}", field=field)
    try:
        return convert_exactly(values, dtype)
    except ValueError as exc:
        raise SpecError(f"{path.name}: {exc}", field=field) from None


def convert_exactly(values: np.ndarray, dtype: ElementType,
                    origin: tuple[int, ...] = ()) -> np.ndarray:
    """`values` as a C-contiguous host array of `dtype`, only if no value changes;
    ValueError naming the first value that would (its index plus `origin`, where
    `values` is a box of a bigger array)."""
    host = dtype.numpy_dtype()
    raw = values.dtype.kind == "V" and not values.dtype.names
    if raw and values.dtype.itemsize == host.itemsize:
        values = values.view(host)          # raw element bytes
    if values.dtype == host:
        return np.ascontiguousarray(values)
    if dtype.name != "fp8e4b15" and np.can_cast(values.dtype, host, "safe"):   # uint8: bits
        return np.ascontiguousarray(values, dtype=host)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"dtype {values.dtype} cannot be converted to {dtype.name}")
    if dtype.kind == "float":
        with np.errstate(over="ignore", invalid="ignore"):
            as_f64 = values.astype(np.float64)
            if dtype.name == "fp8e4b15":
                converted, ok = encode_fp8e4b15_masked(as_f64)
            else:
                converted = as_f64.astype(host)
                ok = np.ones(values.shape, dtype=bool)
            back = to_float64(converted, dtype)
            ok &= (back == as_f64) | (np.isnan(back) & np.isnan(as_f64))
            if values.dtype.kind in "iu":       # 64-bit integers past 2**53
                ok &= back.astype(values.dtype) == values
    else:
        lo, hi = dtype.int_range()
        if values.dtype.kind == "f":        # hi + 1 is a power of two: exact as a float
            with np.errstate(invalid="ignore"):
                ok = np.isfinite(values) & (values == np.round(values))
                ok &= (values >= lo) & (values < float(hi + 1))
        else:
            ok = (values >= lo) & (values <= hi)
        converted = np.where(ok, values, 0).astype(host)
    if not ok.all():
        where = np.unravel_index(int(np.argmin(ok)), values.shape)
        bad = values[where].item()
        at = tuple(int(i) + (origin[k] if origin else 0) for k, i in enumerate(where))
        raise ValueError(f"holds {values.dtype}, which {dtype.name} cannot hold exactly: "
                         f"element {at} = {bad!r}")
    return np.ascontiguousarray(converted)
