"""Messages about a missing driver name the library that was missing (issue 17):
CUBINRUN_LIBCUDA changes what launchers open, and a message must say so."""
from __future__ import annotations

import sys

import pytest

from cubinrun.gpu import driver
from cubinrun.errors import CudaError

from support.cli import run as run_cli
from support.repo import CONFIGS


def _no_library(*args):
    raise type("DynamicLibNotFoundError", (RuntimeError,), {})("not found on this system")


def test_without_the_override_the_message_names_libcuda(monkeypatch):
    monkeypatch.delenv("CUBINRUN_LIBCUDA", raising=False)
    monkeypatch.setattr(driver, "_cuda", lambda: type("cu", (), {"cuInit": _no_library}))
    with pytest.raises(CudaError) as error:
        driver.call("cuInit", 0)
    assert str(error.value) == (f"no NVIDIA driver found: cuInit could not load {driver.LIBCUDA} "
                                "(not found on this system)")
    assert driver.LIBCUDA == ("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")


def test_with_the_override_the_message_says_what_it_changes(monkeypatch):
    monkeypatch.setenv("CUBINRUN_LIBCUDA", "/opt/driver/libcuda.so.1")
    monkeypatch.setattr(driver, "_cuda", lambda: type("cu", (), {"cuInit": _no_library}))
    with pytest.raises(CudaError) as error:
        driver.call("cuInit", 0)
    assert "CUBINRUN_LIBCUDA=/opt/driver/libcuda.so.1 sets only the library launchers open" \
        in str(error.value) and error.value.exit_code == 4


def test_a_launcher_without_its_driver_names_the_override(device, capsys, tmp_path, spec_text,
                                                          monkeypatch):
    """The launcher opens CUBINRUN_LIBCUDA at its first launch: a path that does
    not load is exit 4 and one line naming it, not a traceback."""
    missing = tmp_path / "libcuda-moved.so.1"
    monkeypatch.setenv("CUBINRUN_LIBCUDA", str(missing))
    code, _, err = run_cli(capsys, "launch", "--no-bench", spec_text)
    lines = err.strip().splitlines()
    assert code == 4 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: no NVIDIA driver found: the launcher could not load "
                               f"{missing} (CUBINRUN_LIBCUDA): {missing}")


@pytest.fixture
def spec_text(tmp_path):
    """vector_add with fp16/u32 types: the same parameter sizes, so the cubin
    accepts it, and a launcher module of its own, which has not yet opened a
    driver in this process (a launcher keeps the one it found)."""
    text = (CONFIGS / "vector_add.yaml").read_text()
    text = text.replace('"*fp32"', '"*fp16"').replace("n: i32", "n: u32")
    text = text.replace("../kernels", str(CONFIGS.parent / "kernels"))
    path = tmp_path / "vector_add_fp16.yaml"
    path.write_text(text)
    return path


def test_cuda_python_missing_is_one_line_with_the_fix(monkeypatch):
    """A --no-deps install without cuda-python: exit 4 and the pip line, not a traceback."""
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)     # makes the import fail
    driver._cuda.cache_clear()
    try:
        with pytest.raises(CudaError) as error:
            driver.call("cuInit", 0)
    finally:
        driver._cuda.cache_clear()
    assert error.value.exit_code == 4 and error.value.call == "import cuda.bindings"
    assert "pip install 'cuda-python>=13,<14'" in str(error.value) and "\n" not in str(error.value)
