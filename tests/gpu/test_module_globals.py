"""`globals:` on the CPU: the spec, the dry run against a cubin's symbol table,
and a whole launch through the fake driver (cuModuleGetGlobal answered by
tests/fakecuda/device.py), with checked globals read back."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from support.platforms import skip_on_windows

from cubinrun.binary.cubin import module_globals
from cubinrun.cli import main
from cubinrun.errors import SpecError
from cubinrun.specfile import load_spec
from support.repo import REPO
from support.specs import spec  # noqa: F401  (the fixture)

KERNEL = REPO / "kernels" / "conv1d_constant.cu"

SPEC = f"""\
kernel: {{source: {KERNEL}, arch: sm_90, name: conv1d}}
signature: {{x: "*kfp32", y: "*fp32", n: i32, taps: i32}}
vars: {{N: 1024, TAPS: 5}}
globals:
  d_filter: {{dtype: fp32, shape: [TAPS], init: {{random: uniform, seed: 3}}}}
  d_calls: {{dtype: u32, value: 7}}
args:
  x: {{shape: [N + TAPS - 1], init: random}}
  y: {{shape: [N], init: zeros}}
  n: N
  taps: TAPS
grid: [4]
block: [256]
"""


@pytest.fixture
def write(spec):
    """support.specs' writer, the file named spec.yaml (the messages below name it)."""
    return lambda text: spec(text, "spec.yaml")


@pytest.fixture
def device(device, fake_libcuda):
    """conftest's fake device, for conv1d's parameters (two pointers, two i32)."""
    fake_libcuda.set_param_sizes([8, 8, 4, 4])
    return device


def run_cli(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main([*map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_the_cubin_symbol_table_lists_constant_and_device_globals(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    source = tmp_path / "g.cu"
    source.write_text("__constant__ float d_filter[33 * 33];\n__device__ int d_count;\n"
                      "namespace ns { __device__ double table[2]; }\n"
                      "__global__ void k(float *o) { o[0] = d_filter[0] + d_count + "
                      "ns::table[0]; }\n")
    subprocess.run(["nvcc", "-cubin", "-arch", "sm_90", str(source), "-o",
                    str(tmp_path / "g.cubin")], check=True, capture_output=True)
    found = module_globals((tmp_path / "g.cubin").read_bytes())
    assert found == {"d_filter": 33 * 33 * 4, "d_count": 4, "_ZN2ns5tableE": 16}


def test_globals_are_read_into_the_spec(write):
    spec = load_spec(write(SPEC))
    assert list(spec.globals) == ["d_filter", "d_calls"]
    assert spec.globals["d_filter"].shape == (5,) and spec.globals["d_filter"].section == "globals"
    assert spec.globals["d_calls"].shape == () and spec.globals["d_calls"].init.value == 7
    assert spec.global_lines == {"d_filter": 5, "d_calls": 6}


@pytest.mark.parametrize("entry, fragment", [
    ("d_calls: {value: 7}", "missing required key 'dtype'"),
    ("d_calls: {dtype: u32, value: 7, shape: [2]}", "exactly one of shape"),
    ("d_calls: {dtype: u33, value: 7}", "unknown dtype 'u33'"),
    ("d_calls: {dtype: u32, value: 7, init: zeros}", "takes value, not init"),
    ("x: {dtype: u32, value: 7}", "also a buffer argument"),
    ("d_calls: {dtype: u8, value: 256}", "256 is out of range for u8"),
    ("d_calls: {dtype: u32, value: 2.5}", "u32 needs an integer"),
])
def test_bad_global_entries_name_the_field(write, entry, fragment):
    with pytest.raises(SpecError, match=fragment) as err:
        load_spec(write(SPEC.replace("d_calls: {dtype: u32, value: 7}", entry)))
    assert err.value.line == 6 and err.value.file.endswith("spec.yaml")


def test_an_integer_fill_that_does_not_fit_is_refused_where_it_is_written(write):
    spec = SPEC.replace("seed: 3}}", "seed: 3}}\n"
                        "  d_big: {dtype: i8, shape: [2],\n    init: {fill: 300}}")
    with pytest.raises(SpecError, match="300 is out of range for i8") as err:
        load_spec(write(spec))
    assert err.value.field == "globals.d_big.init.fill" and err.value.line == 7


def test_dry_run_checks_each_global_against_the_cubin(write, capsys):
    code, out, err = run_cli(capsys, "launch", "--dry-run", write(SPEC))
    assert code is None or code == 0, err
    assert "module globals" in out and "d_filter" in out
    # too big: both sizes and the YAML line
    code, _, err = run_cli(capsys, "launch", "--dry-run",
                           write(SPEC.replace("shape: [TAPS]", "shape: [65]")))
    assert code == 2
    assert "spec.yaml:5: globals.d_filter: 260 bytes ([65] of fp32) do not fit the symbol " \
           "'d_filter' of 256 bytes" in err
    # unknown: the module's globals listed
    code, _, err = run_cli(capsys, "launch", "--dry-run",
                           write(SPEC.replace("d_calls: {", "d_cals: {")))
    assert code == 2 and "spec.yaml:6: globals.d_cals:" in err
    assert "has no global 'd_cals'; its globals: d_filter (256 bytes), d_calls (4 bytes)" in err


def test_a_launch_writes_the_globals_and_checks_them(write, device, capsys):
    spec = SPEC + "check:\n  d_calls: {expect: 7}\n  d_filter: {expect: d_filter, exact: true}\n"
    code, out, err = run_cli(capsys, "launch", "--json", "--rep", "1", "--warmup", "1",
                             write(spec))
    assert code == 0, err
    report = json.loads(out)
    outputs = report["check"]["outputs"]
    assert outputs["d_calls"]["passed"] and outputs["d_calls"]["count"] == 1
    assert outputs["d_filter"]["passed"] and outputs["d_filter"]["count"] == 5
    assert "cuModuleGetGlobal" in device.calls
    assert np.frombuffer(device.global_bytes("d_calls", 4), np.uint32)[0] == 7
    written = np.frombuffer(device.global_bytes("d_filter", 20), np.float32)
    assert np.all((written >= -1) & (written < 1)) and len(set(written)) == 5


def test_a_checked_global_that_differs_fails(write, device, capsys):
    spec = SPEC + "check:\n  d_calls: {expect: 8}\n"
    code, out, _ = run_cli(capsys, "launch", "--json", "--rep", "1", "--warmup", "1",
                           write(spec))
    check = json.loads(out)["check"]["outputs"]["d_calls"]
    assert code == 1 and check["first_mismatches"] == [[[], 7, 8]]


def test_the_driver_has_the_last_word_on_a_global_size(write, device, capsys):
    device.module_globals = {"d_filter": 8, "d_calls": 4}      # smaller than the cubin said
    code, _, err = run_cli(capsys, "launch", "--rep", "1", "--warmup", "1", write(SPEC))
    assert code == 2 and "20 bytes ([5] of fp32) do not fit the symbol 'd_filter' of 8" in err


def test_globals_are_written_again_before_each_repeat(write, device, capsys):
    code, out, err = run_cli(capsys, "launch", "--json", "--repeat", "3", "--no-bench",
                             write(SPEC))
    assert code == 0, err
    copies = [c for c in device.calls if c == "cuMemcpyHtoDAsync"]
    assert len(copies) >= 3 * 2                 # each run: both globals (and the buffers)


def test_the_reproducer_writes_and_checks_the_globals(write, fake_libcuda, tmp_path):
    skip_on_windows("the reproducer is a POSIX program (dlopen, run.sh)")
    from support.repro import build, run_repro, write as write_with_repro
    path = write(SPEC.replace("value: 7", "value: 0") + "check:\n"
                 "  d_filter: {expect: d_filter, exact: true}\n  d_calls: {expect: 0}\n")
    folder = tmp_path / "repro"
    write_with_repro(path, folder, arch="sm_90")
    assert '{"d_filter", "inputs/02_d_filter.bin", 20u, 0u, "d_filter"},' in \
        (folder / "repro.c").read_text()
    build(folder)
    done = run_repro(folder, fake_libcuda.path, [8, 8, 4, 4],
                     FAKECUDA_GLOBALS=str(folder / "globals.txt"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "d_filter: pass  0 / 5 mismatches" in done.stdout
    assert "d_calls: pass  0 / 1 mismatches" in done.stdout
    looked_up = [line.split()[0] for line in (folder / "globals.txt").read_text().splitlines()]
    assert looked_up == ["d_filter", "d_calls"]
    assert (folder / "outputs" / "d_filter.bin").read_bytes() == \
        (folder / "inputs" / "02_d_filter.bin").read_bytes()


def test_repro_refuses_a_region_check_in_one_line(write, tmp_path, capsys):
    code, _, err = run_cli(capsys, "repro", write(SPEC + 'check:\n  "y[1:]": {expect: 0}\n'),
                           "-o", tmp_path / "repro", "--arch", "sm_90")
    assert code == 2 and err.count("\n") == 1
    assert "spec.yaml:15: check: repro compares whole outputs; the region check 'y[1:]'" in err
    assert not (tmp_path / "repro" / "repro.c").exists()


def test_inspect_lists_the_module_globals_with_their_sizes(capsys):
    cubin = REPO / "kernels" / "build" / "conv1d_constant.sm_90.cubin"
    code, out, _ = run_cli(capsys, "inspect", "--json", cubin)
    assert code in (None, 0)
    assert json.loads(out)["globals"] == [{"name": "d_filter", "size": 256},
                                          {"name": "d_calls", "size": 4}]
    code, out, _ = run_cli(capsys, "inspect", cubin)
    assert "globals: d_filter (256 bytes), d_calls (4 bytes)" in out


def test_a_namespaced_global_is_found_by_its_cpp_name():
    from cubinrun.gpu.module_globals import describe, symbol_for
    available = {"d_filter": 256, "_ZN2ns5tableE": 16}
    assert symbol_for("ns::table", available) == "_ZN2ns5tableE"
    assert symbol_for("_ZN2ns5tableE", available) == "_ZN2ns5tableE"
    assert symbol_for("table", available) is None
    assert describe(available) == "d_filter (256 bytes), ns::table (_ZN2ns5tableE, 16 bytes)"
