"""Reading the files a user names, with a bound on each; writing the files
a user names, never through a link and only as regular files.

`/dev/zero`, a FIFO or a 40 GiB file named as a cubin must not hang
cubinrun or fill its memory: every input file is read through
`read_bounded`, which refuses what is not a plain file or device, and
refuses a file larger than its format's limit (limits.py) after reading at
most one byte past that limit.
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from .errors import SpecError


class InputTooLarge(SpecError):
    """A file larger than its format's limit."""


def read_bounded(path: str | os.PathLike, limit: int, what: str) -> bytes:
    """The bytes of `path`, at most `limit` of them; SpecError naming `path` otherwise.

    `what` names the format for people ("cubin", "Triton metadata").
    """
    fd = open_input(path, what)
    try:
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


def open_input(path: str | os.PathLike, what: str) -> int:
    """A descriptor open for reading `path`, a plain file or device (a FIFO or a
    folder is refused, never waited on); SpecError naming `path` otherwise.
    The caller reads it within its own bound and closes it."""
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
    except BaseException:
        os.close(fd)
        raise
    return fd


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


# --- outputs -------------------------------------------------------------------
# Files cubinrun writes for a user (-o, --csv, `save:`) are regular files, and a
# write never follows a link: the data goes to a new file in the same folder,
# which then takes the name (a link there is replaced, its target untouched).
# Files written where they lie (--jsonl, a --markdown summary added to) replace
# a link the same way before they are opened (open_in_place): one rule for all.
# A FIFO, device or folder of that name is refused before anything runs: opening
# one would block or write elsewhere. Without `force` an existing name is kept.

def output_problem(path: str | os.PathLike) -> str | None:
    """Why `path` cannot be an output file ("is a FIFO", ...), or None."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be written ({exc.strerror or exc})"
    except ValueError:                      # a NUL in the name: no file system takes it
        return "cannot be a file name (it holds a NUL character)"
    link = ""
    if stat.S_ISLNK(mode):                  # replaced when written; said if it stands for more
        try:
            mode = os.stat(path).st_mode    # (/dev/stdout: a pipe or a terminal)
        except OSError:
            return None
        link = "a link to "
    if stat.S_ISREG(mode):
        return None
    kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    return f"is {link}{kind}, not a regular file (cubinrun writes only regular files)"


def named(path: str | os.PathLike | None, option: str) -> None:
    """UsageError (exit 2) for an output flag given an empty path (`-o ""`):
    it names no file, and taken as a folder it would be the current one."""
    from .errors import UsageError
    if path is not None and not os.fspath(path):
        raise UsageError(f"{option} '': an empty path names no file")


def check_output(path: str | os.PathLike, force: bool, option: str = "-o") -> Path:
    """The checks an output gets before any work: a name, an existing folder,
    nothing there but a regular file (or a link, replaced), and that only with
    `force`. UsageError (exit 2) naming `option` and the fix otherwise."""
    from .errors import UsageError
    named(path, option)
    out = Path(path)
    if not out.parent.is_dir():
        raise UsageError(f"cannot write {option} {out}: no folder {out.parent}")
    if problem := output_problem(out):
        raise UsageError(f"{option} {out}: {problem}")
    if not force and os.path.lexists(out):
        raise UsageError(f"{out} exists; pass --force to overwrite it")
    return out


class OutputFile:
    """A new file written beside `path` that takes its name on `commit()`
    (binary; `file` is the open file). Created with O_EXCL and O_NOFOLLOW and
    the user's umask; `abort()` removes it. Without `replace`, a name that
    appeared meanwhile is kept (FileExistsError)."""

    def __init__(self, path: str | os.PathLike, mode: int = 0o666, replace: bool = True):
        import secrets
        self.path, self.replace = Path(path), replace
        flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
        for _ in range(100):
            self.temporary = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
            try:
                fd = os.open(self.temporary, flags, mode)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(17, "no free temporary name", str(self.path.parent))
        self.file = os.fdopen(fd, "wb")

    def commit(self) -> None:
        try:
            self.file.close()               # flushes: on a full disk it fails here
            if self.replace:
                os.replace(self.temporary, self.path)
            else:
                self._link()
        finally:
            self._remove_temporary()

    def abort(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass                            # the failure being handled said it already
        finally:
            self._remove_temporary()

    def _link(self) -> None:
        try:
            os.link(self.temporary, self.path)      # fails when the name exists: no race
        except FileExistsError:
            raise
        except OSError:                             # a file system without hard links
            if os.path.lexists(self.path):
                raise FileExistsError(17, "exists", str(self.path)) from None
            os.replace(self.temporary, self.path)

    def _remove_temporary(self) -> None:
        try:
            os.unlink(self.temporary)
        except FileNotFoundError:
            pass

    def __enter__(self) -> "OutputFile":
        return self

    def __exit__(self, kind, *_) -> None:
        self.commit() if kind is None else self.abort()


def write_output(path: str | os.PathLike, data: bytes | str, force: bool, option: str = "-o",
                 mode: int = 0o666) -> Path:
    """`data` written whole to `path` under the rules above; failures are one
    line (UsageError, exit 2)."""
    from .errors import UsageError
    out = check_output(path, force, option)
    try:
        with OutputFile(out, mode, replace=force) as written:
            written.file.write(data.encode("utf-8") if isinstance(data, str) else data)
    except FileExistsError:
        raise UsageError(f"{out} exists; pass --force to overwrite it") from None
    except OSError as exc:
        raise UsageError(f"cannot write {option} {out}: {exc.strerror or exc}") from None
    return out


def open_in_place(path: str | os.PathLike, flags: int) -> int:
    """A descriptor for writing the output `path` where it lies (a file added
    to, or written as runs end): never through a link. A link there is first
    replaced by an empty file of its own, as every output replaces one (its
    target untouched); O_NOFOLLOW keeps a link planted meanwhile from being
    opened. OSError as os.open raises it."""
    import errno
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_CREAT | nofollow | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(10):
        if os.path.islink(path):
            with OutputFile(path):              # an empty file takes the link's name
                pass
        try:
            return os.open(path, flags, 0o666)
        except OSError as exc:
            if not (nofollow and os.path.islink(path)):
                raise
    raise OSError(errno.ELOOP, "a link keeps taking the name", os.fspath(path))


def append_output(path: str | os.PathLike, text: str, option: str) -> None:
    """`text` added to the end of the output `path` (a summary file several
    steps add to), under the rules above; UsageError naming `option` and the
    file when it cannot be written (a full disk)."""
    from .errors import UsageError
    named(path, option)
    if problem := output_problem(path):
        raise UsageError(f"{option} {path}: {problem}")
    try:
        fd = open_in_place(path, os.O_WRONLY | os.O_APPEND)
        try:
            data = text.encode("utf-8")
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
    except OSError as exc:
        raise UsageError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


# --- outputs of a run carried to a Ray worker (runs/bundle.py) -------------------
# The worker runs from a private folder that mirrors this machine's paths below
# its root; what the run writes must stay there too, never elsewhere on the node.
_mirror_root: Path | None = None


@contextlib.contextmanager
def outputs_inside(root: Path):
    """While a worker runs a task from its mirror at `root`."""
    global _mirror_root
    previous, _mirror_root = _mirror_root, Path(os.path.abspath(root))
    try:
        yield
    finally:
        _mirror_root = previous


def mirrored_output(path: Path, as_written: str) -> Path | None:
    """Where a run writes the output `path` (named `as_written` in the spec):
    itself, except in a mirror, where an absolute name goes below its root as
    every mirrored file does, and a relative one must stay inside it (None:
    it climbs out with `..`)."""
    root = _mirror_root
    if root is None:
        return path
    if os.path.isabs(os.path.expanduser(as_written)):
        return root / path.relative_to(path.anchor)
    return path if Path(os.path.abspath(path)).is_relative_to(root) else None


# --- a result file written as runs end (results/writers.py's --jsonl) ----------
# Two commands writing one file afresh would each write at their own offset and
# tear each other's lines. The first takes an exclusive lock (advisory: POSIX
# record locks, which the OS also lets one ask the holder of; on Windows a byte
# far past any end, so readers of the data are not blocked); a second is refused.

def lock_for_writing(fd: int) -> str | None:
    """Lock the open file `fd` for writing without waiting: None when locked
    (or where the file system has no locks: it is written as before), else who
    holds it ("process 1234", or "another process" where the OS does not say)."""
    import errno
    held = (errno.EACCES, errno.EAGAIN, getattr(errno, "EDEADLOCK", errno.EDEADLK))
    if os.name == "nt":
        import msvcrt
        try:
            os.lseek(fd, _FAR_BYTE, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return None
        except OSError as exc:
            return "another process" if exc.errno in held else None
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
    import fcntl
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return None
    except OSError as exc:
        if exc.errno not in held:               # ENOLCK: a file system without locks
            return None
        pid = _lock_holder(fd)
        return f"process {pid}" if pid else "another process"


_FAR_BYTE = 1 << 40
_APPEND_BYTE = _FAR_BYTE + 1        # appenders' turn: apart from the afresh writer's lock


@contextlib.contextmanager
def append_turn(fd: int):
    """Around one write to a file several processes append to. On POSIX a
    write() to an O_APPEND file lands whole at the end; Windows' O_APPEND is a
    seek and a write, so two writers can land on one end and tear a line
    there (seen under Wine): the writers take turns on a lock (msvcrt retries
    for ~10 s, then OSError, a failed write)."""
    if os.name != "nt":
        yield
        return
    import msvcrt
    os.lseek(fd, _APPEND_BYTE, os.SEEK_SET)
    msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
    try:
        os.lseek(fd, 0, os.SEEK_END)
        yield
    finally:
        os.lseek(fd, _APPEND_BYTE, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

# struct flock, which F_GETLK fills in, where its layout is known (64-bit)
_FLOCK = {"linux": ("hhxxxxqqixxxx", ("type", "whence", "start", "len", "pid")),
          "darwin": ("qqihh", ("start", "len", "pid", "type", "whence"))}


def _lock_holder(fd: int) -> int | None:
    import fcntl
    import struct
    import sys
    if sys.platform not in _FLOCK or struct.calcsize("P") != 8:
        return None
    layout, names = _FLOCK[sys.platform]
    asked = {"type": fcntl.F_WRLCK, "whence": os.SEEK_SET, "start": 0, "len": 0, "pid": 0}
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(layout, *(asked[n] for n in names)))
    except OSError:
        return None
    pid = dict(zip(names, struct.unpack(layout, answer)))["pid"]
    return pid if pid > 0 else None
