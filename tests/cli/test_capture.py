"""`cubinrun capture`'s command line in a real process, on this machine (no GPU):
an output folder that exists is a usage error (exit 2) before the driver is
looked for, and a program's own option given without `--` says to put `--`
before the program. The program never runs in either case."""
from __future__ import annotations

import os
import subprocess
import sys

from support.repo import PACKAGE_PARENT


def _capture(*args: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_PARENT))
    return subprocess.run([sys.executable, "-m", "cubinrun", "capture", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


def test_an_existing_output_folder_is_a_usage_error_before_the_driver(tmp_path):
    (tmp_path / "out").mkdir()
    marker = tmp_path / "ran"
    done = _capture("-o", "out", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w')",
                    cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == ["error: out exists; pass --force to replace it"]
    assert not marker.exists() and list((tmp_path / "out").iterdir()) == []


def test_force_on_a_folder_that_is_no_capture_is_refused_before_the_driver(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep")
    done = _capture("-o", "out", "--force", "--", "true", cwd=tmp_path)
    assert done.returncode == 2 and "it is not a capture folder" in done.stderr
    assert (tmp_path / "out" / "mine.txt").read_text() == "keep"


def test_a_program_option_without_the_double_dash_says_to_add_it(tmp_path):
    marker = tmp_path / "ran"
    done = _capture("-o", "new", sys.executable, "-c", f"open({str(marker)!r}, 'w')",
                    cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "No such option '-c'" in lines[0]
    assert "put `--` before the program" in lines[0] and "-- CMD [ARGS]" in lines[0]
    assert not marker.exists() and not (tmp_path / "new").exists()
