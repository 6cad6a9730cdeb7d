"""Reading the files a user names, with a bound on each.

`/dev/zero`, a FIFO or a 40 GiB file named as a cubin must not hang
cubinrun or fill its memory: every input file is read through
`read_bounded`, which refuses what is not a plain file or device, and
refuses a file larger than its format's limit (limits.py) after reading at
most one byte past that limit.
"""
from __future__ import annotations

import os
import stat

from .errors import SpecError


class InputTooLarge(SpecError):
    """A file larger than its format's limit."""


def read_bounded(path: str | os.PathLike, limit: int, what: str) -> bytes:
    """The bytes of `path`, at most `limit` of them; SpecError naming `path` otherwise.

    `what` names the format for people ("cubin", "Triton metadata").
    """
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not wait for one.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpecError(f"{path}: is a directory, not a {what} file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise SpecError(f"{path}: is a directory, not a {what} file")
        if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
            raise SpecError(f"{path}: not a regular file (a {what} file is read whole)")
        if hasattr(os, "O_NONBLOCK"):   # Windows has neither O_NONBLOCK nor FIFOs to fear
            os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if size > limit:
        raise InputTooLarge(f"{path}: larger than {_size(limit)}, the most cubinrun reads as "
                        f"a {what} file")
    return b"".join(chunks)


def read_text(path: str | os.PathLike, limit: int, what: str) -> str:
    """`read_bounded` decoded as UTF-8; SpecError naming the line of a bad byte."""
    return decode_utf8(read_bounded(path, limit, what), str(path), what)


def decode_utf8(data: bytes, where: str, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 text (byte {data[exc.start]:#04x}); a {what} file must "
                        "be UTF-8", file=where, line=line) from None


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"
