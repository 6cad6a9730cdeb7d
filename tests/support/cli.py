"""The command line in this process, as a user types it: the exit code, stdout
and stderr of one command, and the one line a user's error must be."""
from __future__ import annotations

import pytest

from cubinrun.cli import main


def run(capsys, *args) -> tuple[int, str, str]:
    """`cubinrun ARGS...` through main(): (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as done:
        main([*map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, out, err


def one_error_line(err: str) -> str:
    """stderr that is exactly one line and no traceback: that line."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def error_line(capsys, *args, code: int = 2) -> str:
    """`cubinrun ARGS...` that ends with `code` and one line on stderr: that line."""
    got, _, err = run(capsys, *args)
    lines = err.strip().splitlines()
    assert got == code and len(lines) == 1 and "Traceback" not in err, (got, err)
    return lines[0]
