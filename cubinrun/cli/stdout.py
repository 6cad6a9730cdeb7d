"""stdout that never decides the exit code (SPEC section 3).

A reader that leaves early (`| head -1`, `| true`) closes the pipe, and the
next write raises BrokenPipeError; a full disk (`> /dev/full`) raises
ENOSPC, often only at the final flush. Either can happen anywhere output is
written: in the middle of a sweep's `--jsonl -`, in rich's table, in click's
help. Caught where it happens, it would end the command with whatever code
the catcher picks (click's is 1, the code of a failed check) and lose the
run's own.

So the command line writes through `GuardedStdout`: the first failed write
points file descriptor 1 at the null device, as Python's documentation on
SIGPIPE recommends (so nothing later, Python's flush at exit included, fails
again), and every later write goes there. The command carries on to its own
end. A closed pipe is quiet and keeps the command's exit code (the reader
chose to leave); anything else (a full disk, an I/O error) lost data the user
asked for: one line on stderr, and the command ends with exit 2 (`failed`),
or its own code where that is worse (3, 4).
"""
from __future__ import annotations

import errno
import os
import sys


class GuardedStdout:
    """A proxy for a text stream whose write and flush cannot fail."""

    def __init__(self, stream):
        self._stream = stream
        self.lost: OSError | None = None        # why the output stopped, if it did

    @property
    def failed(self) -> OSError | None:
        """The error that lost output, unless it was a pipe its reader closed."""
        return None if self.lost is None or _closed_pipe(self.lost) else self.lost

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            self._give_up(error)
            return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            self._give_up(error)

    def __getattr__(self, name):            # isatty, fileno, encoding, buffer...
        return getattr(self._stream, name)

    def _give_up(self, error: OSError) -> None:
        if self.lost is not None:
            return
        self.lost = error
        _point_at_null(self._stream)
        if not _closed_pipe(error):
            sys.stderr.write(f"error: cannot write to stdout: {error.strerror or error}; "
                             "the output is lost\n")
        try:
            self._stream.flush()                # what the buffer kept goes to the null device
        except (OSError, ValueError):
            pass


def _closed_pipe(error: OSError) -> bool:
    return isinstance(error, BrokenPipeError) or error.errno == errno.EPIPE


def _point_at_null(stream) -> None:
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return                                  # not a real file (a test's capture)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, descriptor)
        os.close(null)
    except OSError:
        pass


def install() -> tuple[object, GuardedStdout]:
    """Put a guard on sys.stdout; returns (the stream it wraps, the guard)."""
    original = sys.stdout
    guard = original if isinstance(original, GuardedStdout) else GuardedStdout(original)
    sys.stdout = guard
    return original, guard
