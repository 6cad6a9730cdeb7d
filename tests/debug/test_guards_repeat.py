"""Guard bands and `--repeat` on the CPU: the fake driver's device memory is
host memory, so a test plays the kernel by writing into it when the launch is
synchronised (around the buffer, or differently from run to run)."""
from __future__ import annotations

import ctypes
import json
import struct

import pytest
from support.cli import run as run_cli
from support.fake_runs import play_kernel
from support.repo import REPO

from cubinrun.gpu.guards import GUARD_BYTES, PATTERN
from cubinrun.debug.repeat import first_difference

N = 1024                                # elements of each fp32 buffer


@pytest.fixture
def passing_spec(tmp_path):
    """The vector add with a check that the untouched output meets (no kernel runs here)."""
    text = (REPO / "configs" / "vector_add.yaml").read_text()
    path = tmp_path / "va.yaml"
    path.write_text(text.replace("expect: x + y", "expect: 0 * x")
                    .replace("../kernels", str(REPO / "kernels")))
    return path


def launch_json(capsys, spec, *extra):
    code, out, err = run_cli(capsys, "launch", "--json", "--no-bench", spec, "--set", f"N={N}",
                             *extra)
    return code, json.loads(out) if out else None, err


def test_guards_are_on_by_default_and_keep_the_buffer_aligned(device, fake_libcuda, passing_spec,
                                                              capsys):
    code, report, _ = launch_json(capsys, passing_spec)
    assert code == 0 and report["guards"]["passed"] is True
    assert report["guards"]["buffers"] == 3 and report["guards"]["violations"] == []
    pointers = [int.from_bytes(p, "little") for p in fake_libcuda.launches()[0].params[:3]]
    assert all(p % 256 == 0 for p in pointers)
    # every allocation is the buffer plus a band on each side, freed at the end
    assert not device.memory


def test_a_write_past_the_end_fails_naming_buffer_side_and_offset(device, fake_libcuda,
                                                                  passing_spec, capsys):
    play_kernel(device, fake_libcuda,
                lambda out, _: ctypes.memmove(out + 4 * N, struct.pack("<f", 7.0), 4))
    code, report, _ = launch_json(capsys, passing_spec)
    assert code == 1 and report["check"]["passed"] is False
    assert report["check"]["outputs"]["out"]["passed"] is True     # out itself is right
    [violation] = report["guards"]["violations"]
    assert violation == {"buffer": "out", "side": "after", "first_offset": 4 * N,
                         "last_offset": 4 * N + 3, "bytes_changed": 4, "first_element": N}


def test_a_write_before_the_start_and_the_human_report(device, fake_libcuda, passing_spec,
                                                       capsys):
    play_kernel(device, fake_libcuda, lambda out, _: ctypes.memset(out - 8, 0, 2))
    code, out, _ = run_cli(capsys, "launch", "--no-bench", passing_spec, "--set", f"N={N}")
    assert code == 1
    assert "guard bands FAIL" in out
    assert "out: 2 bytes written before its start, at bytes -8..-7 (element [-2])" in out


def test_a_changed_byte_that_equals_the_pattern_is_not_seen(device, fake_libcuda, passing_spec,
                                                            capsys):
    # the limit of the method, stated: a write of the pattern's own bytes is invisible
    play_kernel(device, fake_libcuda, lambda out, _: ctypes.memmove(out + 4 * N, PATTERN, 4))
    code, report, _ = launch_json(capsys, passing_spec)
    assert code == 0 and report["guards"]["violations"] == []


def test_no_guard_allocates_the_buffers_alone(device, fake_libcuda, passing_spec, capsys):
    sizes = []
    alloc = device.cuMemAlloc
    device.cuMemAlloc = lambda n: sizes.append(n) or alloc(n)
    code, report, _ = launch_json(capsys, passing_spec, "--no-guard")
    assert code == 0 and "guards" not in report
    assert sizes == [4 * N] * 3
    sizes.clear()
    launch_json(capsys, passing_spec)
    assert sizes == [4 * N + 2 * GUARD_BYTES] * 3


def test_repeat_reports_the_buffer_index_values_and_runs(device, fake_libcuda, passing_spec,
                                                         capsys):
    # a "kernel" whose out[5] depends on the run: every later run differs from the first
    play_kernel(device, fake_libcuda,
                lambda out, run: ctypes.memmove(out + 20, struct.pack("<f", run / 4), 4))
    code, report, _ = launch_json(capsys, passing_spec, "--repeat", "4")
    assert code == 1 and report["check"]["passed"] is False
    assert report["repeat"]["runs"] == 4 and report["repeat"]["buffers"] == ["x", "y", "out"]
    [d] = report["repeat"]["disagreements"]
    assert d == {"buffer": "out", "runs_differing": 3, "first_run": 2, "first_index": [5],
                 "elements_differing": 1, "run1_value": 0.25, "value": 0.5}
    assert fake_libcuda.launch_count == 4


def test_repeat_restores_the_inputs_before_each_run(device, fake_libcuda, passing_spec, capsys):
    # an accumulating "kernel" (out[0] += 1) gives the same result every run
    # only because every buffer gets its input back before each launch
    def accumulate(out, _):
        value = ctypes.c_float.from_address(out)
        value.value += 1
    play_kernel(device, fake_libcuda, accumulate)
    code, report, _ = run_cli(capsys, "launch", "--no-bench", passing_spec, "--set", f"N={N}",
                              "--repeat", "3")
    assert "repeat: 3 runs, every buffer the same bit for bit" in report
    assert code == 1                        # out[0] = 1 fails the check of 0 * x, as it should


def test_first_difference_compares_bits():
    import numpy as np
    a = np.array([0.0, 1.0, np.nan], dtype=np.float32)
    assert first_difference(a, a.copy()) is None               # NaN equals itself in bits
    b = a.copy()
    b[0] = -0.0
    b[1] = 2.0
    k, count, x, y = first_difference(a, b)
    assert (k, count, float(x[0]), float(y[0])) == (0, 2, 0.0, -0.0)
