"""Sample specs for tests: the vector add as YAML text (BASE) and the `spec`
fixture that writes such text to a file; copies of configs/ samples with
edits (spec_copy), and the `passing` fixture: the vector add with a check the
fake driver's untouched output meets."""
from __future__ import annotations

from pathlib import Path

import pytest

from support.repo import CONFIGS, REPO

CUBIN = REPO / "kernels" / "build" / "vector_add.sm_90.cubin"
BASE = f"""kernel:
  cubin: {CUBIN}
  name: add_kernel
signature:
  x: "*fp32"
  y: "*fp32"
  out: "*fp32"
  n: i32
vars:
  N: 1024
args:
  x: {{shape: [N], init: random}}
  y: {{shape: [N], init: random}}
  out: {{shape: [N]}}
  n: N
grid: [4]
"""


@pytest.fixture
def spec(tmp_path):
    """Write YAML text to a file in tmp_path; its path."""
    def write(text: str, name: str = "s.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


def spec_copy(tmp_path: Path, name: str, edits: dict[str, str] = {}, source="vector_add.yaml"):
    text = (CONFIGS / source).read_text().replace("../kernels", str(REPO / "kernels"))
    for old, new in edits.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def passing(tmp_path) -> Path:
    """The vector add with a check the fake's untouched output meets (exit 0)."""
    return spec_copy(tmp_path, "passing.yaml", {"expect: x + y": "expect: 0 * x",
                                                 "N: 1048576": "N: 4096"})

