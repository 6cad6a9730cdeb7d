"""The cubins inside an image the injection library saved (a module CUPTI
handed over, or a library's image, `libraries/lN.bin`): the image itself when
it is a cubin, else every cubin of the fatbin it is, compressed ones
unpacked.

libtorch's fatbins are compressed (`nvcc -Xfatbin -compress-all`): an entry
flagged 0x8000 is one zstd frame, unpacked with the `zstandard` package when
it is installed, else with the system's libzstd through ctypes. The older
scheme (0x2000, CUDA 12's first) is not unpacked: such a kernel stays left
out with the reason.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

from ..binary.cubin import read_fatbin, is_fatbin
from ..errors import CubinrunError

ZSTD_FLAG = 0x8000
MAX_UNPACKED = 1 << 30               # one cubin: a bound on what a damaged frame may claim


def cubins_in(data: bytes) -> list[bytes]:
    """Every cubin `data` holds: [] for PTX only, a damaged image or an entry that
    cannot be unpacked here."""
    if data[:4] == b"\x7fELF":
        return [data]
    if not is_fatbin(data):
        return []
    try:
        entries = read_fatbin(data)
    except CubinrunError:
        return []
    cubins = []
    for entry in entries:
        if entry.kind != "cubin":
            continue
        if not entry.compressed:
            cubins.append(entry.payload)
        elif (unpacked := _unzstd(entry.payload)) is not None:
            cubins.append(unpacked)
    return cubins


def _unzstd(frame: bytes) -> bytes | None:
    if frame[:4] != b"\x28\xb5\x2f\xfd":         # not zstd: the older scheme
        return None
    try:
        import zstandard
    except ImportError:
        return _unzstd_with_libzstd(frame)
    try:       # an object, not decompress(): the entry pads the frame after its end
        return zstandard.ZstdDecompressor().decompressobj().decompress(frame)
    except zstandard.ZstdError:
        return None


def _unzstd_with_libzstd(frame: bytes) -> bytes | None:
    library = _libzstd()
    if library is None:
        return None
    size = library.ZSTD_getFrameContentSize(frame, len(frame))
    if size >= 1 << 63 or size > MAX_UNPACKED:    # unknown (-1, -2 as unsigned) or too big
        return None
    length = library.ZSTD_findFrameCompressedSize(frame, len(frame))   # the entry pads it
    if library.ZSTD_isError(length):
        return None
    out = ctypes.create_string_buffer(max(int(size), 1))
    written = library.ZSTD_decompress(out, len(out), frame, length)
    if library.ZSTD_isError(written) or written != size:
        return None
    return out.raw[:written]


@functools.lru_cache(maxsize=1)
def _libzstd():
    name = ctypes.util.find_library("zstd")
    try:
        library = ctypes.CDLL(name or "libzstd.so.1")
    except OSError:
        return None
    library.ZSTD_getFrameContentSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    library.ZSTD_getFrameContentSize.restype = ctypes.c_ulonglong
    library.ZSTD_findFrameCompressedSize.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    library.ZSTD_findFrameCompressedSize.restype = ctypes.c_size_t
    library.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                        ctypes.c_size_t]
    library.ZSTD_decompress.restype = ctypes.c_size_t
    library.ZSTD_isError.argtypes = [ctypes.c_size_t]
    library.ZSTD_isError.restype = ctypes.c_uint
    return library
