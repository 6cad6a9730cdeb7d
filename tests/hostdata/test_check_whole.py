"""Checks beyond elementwise on the CPU: references made whole (`A @ B`,
reductions), region checks, Python references (found by parsing, run only for
a launch), the memory bound and the reference cache of a sweep."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest
from support.platforms import skip_on_windows

from cubinrun.hostdata import refcache
from cubinrun.hostdata.check import Checker, check_reference, run_check
from cubinrun.dtypes import ELEMENT_TYPES
from cubinrun.errors import SpecError
from cubinrun.hostdata.values import input_values
from cubinrun.hostdata.pyreference import forget_modules
from cubinrun.specfile import load_spec
from support.repo import REPO

FP32, FP64 = ELEMENT_TYPES["fp32"], ELEMENT_TYPES["fp64"]

MATMUL = """\
kernel: {cubin: k.cubin, name: k}
signature: {A: "*fp32", B: "*fp32", C: "*fp32"}
vars: {M: 64, N: 48, K: 32}
args:
  A: {shape: [M, K], init: random}
  B: {shape: [K, N], init: random}
  C: {shape: [M, N]}
grid: [1]
check:
  C: {expect: A @ B}
"""


@pytest.fixture(autouse=True)
def _fresh_cache():
    refcache.CACHE.clear()
    forget_modules()
    yield
    refcache.CACHE.clear()


def inputs_of(spec):
    return {name: input_values(b, i) for i, (name, b) in enumerate(spec.buffers.items())}


def whole(spec, name):
    return inputs_of(spec)[name].whole()


def test_a_float32_matmul_passes_against_a_float64_reference_with_default_tolerances():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (96, 2048)).astype(np.float32)
    b = rng.uniform(-1, 1, (2048, 80)).astype(np.float32)
    from cubinrun.specfile.model import Check
    from cubinrun.specfile.expr import parse_expr
    check = Check("C", expect=parse_expr("A @ B", arrays=True))
    got = run_check(check, a @ b, FP32, {"A": a, "B": b}, {})    # NumPy's float32 sgemm
    assert got.passed, got
    assert got.atol > 1e-6 and got.rtol == 1e-5       # rtol x max|reference|
    wrong = (a @ b).copy()
    wrong[3, 4] += 1e-2
    bad = run_check(check, wrong, FP32, {"A": a, "B": b}, {})
    assert not bad.passed and bad.first_mismatches[0].index == (3, 4)


def test_an_elementwise_reference_keeps_its_tight_default_atol():
    from cubinrun.specfile.expr import parse_expr
    from cubinrun.specfile.model import Check
    x = np.linspace(-1, 1, 100)
    got = run_check(Check("y", expect=parse_expr("x * 1000", arrays=True)), x * 1000, FP64,
                    {"x": x}, {})
    assert got.passed and got.atol == 1e-12


def test_matmul_spec_checks_a_whole_reference(write_spec):
    spec = load_spec(write_spec(MATMUL))
    check = spec.checks[0]
    check_reference(check, spec.buffers["C"], spec.buffers, spec.expression_env())
    a, b = whole(spec, "A"), whole(spec, "B")
    checker = Checker(check, (64, 48), FP32, inputs_of(spec), spec.expression_env())
    out = (a.astype(np.float64) @ b).astype(np.float32)
    result = checker.result([checker.compare(box, out.reshape(-1)[box[0]:box[1]])
                             for box in checker.boxes])
    assert result.passed and result.count == 64 * 48


def test_a_shape_error_is_found_by_the_dry_run_naming_the_shapes(write_spec):
    spec = load_spec(write_spec(MATMUL.replace("A @ B", "B @ A")))
    with pytest.raises(SpecError, match=re.escape("shapes [32, 48] @ [64, 32]: inner sizes "
                                                  "48 and 64 differ")) as err:
        check_reference(spec.checks[0], spec.buffers["C"], spec.buffers,
                        spec.expression_env())
    assert err.value.field == "check.C.expect"
    spec = load_spec(write_spec(MATMUL.replace("A @ B", "sum(A @ B, axis=1)")))
    with pytest.raises(SpecError, match=re.escape("has shape [64], which does not broadcast "
                                                  "to the output's [64, 48]")):
        check_reference(spec.checks[0], spec.buffers["C"], spec.buffers,
                        spec.expression_env())


def test_a_reference_beyond_the_check_memory_is_refused_with_its_size(write_spec, monkeypatch):
    spec = load_spec(write_spec(MATMUL))
    monkeypatch.setenv("CUBINRUN_CHECK_MEMORY", "40K")
    with pytest.raises(SpecError, match=r"'A @ B' needs \d+\.\d+ KiB of host memory as whole "
                                        r"arrays, more than the 40\.00 KiB a check may use"):
        check_reference(spec.checks[0], spec.buffers["C"], spec.buffers,
                        spec.expression_env())
    with pytest.raises(SpecError, match="more than the 40.00 KiB"):
        Checker(spec.checks[0], (64, 48), FP32, inputs_of(spec), spec.expression_env())
    monkeypatch.setenv("CUBINRUN_CHECK_MEMORY", "lots")
    with pytest.raises(SpecError, match="CUBINRUN_CHECK_MEMORY='lots': expected bytes"):
        check_reference(spec.checks[0], spec.buffers["C"], spec.buffers,
                        spec.expression_env())


STENCIL = """\
kernel: {cubin: k.cubin, name: k}
signature: {x: "*fp64", y: "*fp64"}
vars: {N: 6}
args:
  x: {shape: [N, N], init: random}
  y: {shape: [N, N]}
grid: [1]
check:
  "y[1:-1, 1:N-1]": {expect: "0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])"}
"""


def stencil(x):
    y = np.full_like(x, 99.0)                      # the border: never written, never checked
    y[1:-1, 1:-1] = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    return y


def test_a_region_check_compares_only_its_slice(write_spec):
    spec = load_spec(write_spec(STENCIL))
    check = spec.checks[0]
    assert check.output == "y" and check.name == "y[1:-1, 1:N-1]" and check.line == 9
    assert check.region == (slice(1, -1, None), slice(1, 5, None))
    check_reference(check, spec.buffers["y"], spec.buffers, spec.expression_env())
    x = whole(spec, "x")
    y = stencil(x)
    inputs = {"x": x}
    assert run_check(check, y, FP64, inputs, {}).passed
    y[3, 2] += 1.0
    result = run_check(check, y, FP64, inputs, {})
    assert not result.passed and result.count == 16
    assert result.first_mismatches[0].index == (3, 2)       # the output's index, not the region's


def test_a_region_checked_against_a_whole_size_reference_takes_its_slice(write_spec):
    spec = load_spec(write_spec(STENCIL.replace(
        '{expect: "0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])"}',
        "{expect: x * 2}")))
    x = whole(spec, "x")
    y = np.where(np.pad(np.ones((4, 4), bool), 1), x * 2, -1.0)
    assert run_check(spec.checks[0], y, FP64, {"x": x}, {}).passed


@pytest.mark.parametrize("key, fragment", [
    ('"y[1:-1, 7]"', "index 7 is out of range for size 6"),
    ('"y[1:-1, :, 0]"', "3 indices for shape [6, 6]"),
    ('"z[1:]"', "not a buffer argument or global"),
    ('"y + 1"', "neither an output name nor a slice of one"),
    ('"y[1:Q]"', "unknown name 'Q'"),
])
def test_bad_region_keys_name_the_key_and_line(write_spec, key, fragment):
    with pytest.raises(SpecError, match=re.escape(fragment)) as err:
        load_spec(write_spec(STENCIL.replace('"y[1:-1, 1:N-1]"', key)))
    assert err.value.line == 9


REFERENCE_SPEC = """\
kernel: {cubin: k.cubin, name: k}
signature: {x: "*fp32", y: "*fp32", z: "*fp32"}
vars: {N: 8, SCALE: 3}
args:
  x: {shape: [N], init: arange}
  y: {shape: [N]}
  z: {shape: [N]}
grid: [1]
check:
  y: {reference: refs.py:step}
  z: {reference: refs.py:step}
"""

REFS = """\
import numpy as np
CALLS = []

def step(inputs, vars):
    CALLS.append(1)
    open(__file__ + ".calls", "a").write("x")
    x = inputs["x"]
    return {"y": x * vars["SCALE"], "z": np.cumsum(x)}

def broken(inputs, vars):
    x = inputs["x"]
    return x[100] + 1

def shape(inputs, vars):
    return np.zeros(3)
"""


def test_a_python_reference_is_found_without_running_it(write_spec, tmp_path):
    (tmp_path / "refs.py").write_text(REFS)
    spec = load_spec(write_spec(REFERENCE_SPEC))
    reference = spec.checks[0].reference
    assert reference.function == "step" and reference.line == 4
    for check in spec.checks:
        check_reference(check, spec.buffers[check.output], spec.buffers, spec.expression_env())
    assert not (tmp_path / "refs.py.calls").exists()          # not imported, not called


@pytest.mark.parametrize("value, fragment", [
    ("refs.py:nope", "defines no function 'nope' at its top level (it defines: broken, "
                     "shape, step)"),
    ("missing.py:step", "missing.py: no such file"),
    ("refs.py", "must be FILE.py:FUNCTION"),
    ("../refs.py:step", "must be a .py file in the spec's folder or below it"),
    ("/etc/refs.py:step", "must be a .py file in the spec's folder or below it"),
    ("refs.py:1x", "'1x' is not a Python function name"),
    ("bad.py:step", "bad.py:2: not valid Python"),
    ("link.py:step", "link.py is a symbolic link"),
])
def test_a_missing_or_odd_reference_is_a_spec_error(write_spec, tmp_path, value, fragment):
    if value.startswith("link.py"):
        skip_on_windows("a symlink there needs a privilege (and Wine's are not Windows')")
    (tmp_path / "refs.py").write_text(REFS)
    (tmp_path / "bad.py").write_text("x = 1\ndef step(:\n")
    os.symlink(tmp_path / "refs.py", tmp_path / "link.py")
    with pytest.raises(SpecError, match=re.escape(fragment)) as err:
        load_spec(write_spec(REFERENCE_SPEC.replace("refs.py:step}\n  z", f"{value}}}\n  z")))
    assert err.value.field == "check.y.reference" and err.value.line == 10


def test_a_python_reference_runs_once_for_the_outputs_sharing_it(write_spec, tmp_path):
    (tmp_path / "refs.py").write_text(REFS)
    spec = load_spec(write_spec(REFERENCE_SPEC))
    inputs, env = inputs_of(spec), spec.expression_env()
    x = whole(spec, "x")
    for check, expected in zip(spec.checks, (x * 3, np.cumsum(x))):
        checker = Checker(check, (8,), FP32, inputs, env, scope=str(spec.path))
        result = checker.result([checker.compare(b, expected.astype(np.float32)[b[0]:b[1]])
                                 for b in checker.boxes])
        assert result.passed, result
    assert (tmp_path / "refs.py.calls").read_text() == "x"


def test_an_error_inside_a_reference_names_its_file_and_line(write_spec, tmp_path):
    (tmp_path / "refs.py").write_text(REFS)
    spec = load_spec(write_spec(REFERENCE_SPEC.replace("refs.py:step}\n  z", "refs.py:broken}"
                                                       "\n  z")))
    with pytest.raises(SpecError) as err:
        Checker(spec.checks[0], (8,), FP32, inputs_of(spec), spec.expression_env())
    assert str(err.value).endswith(f"{tmp_path / 'refs.py'}:12: broken() raised IndexError: "
                                   "index 100 is out of bounds for axis 0 with size 8")
    assert err.value.field == "check.y.reference"
    spec = load_spec(write_spec(REFERENCE_SPEC.replace("refs.py:step}\n  z", "refs.py:shape}"
                                                       "\n  z")))
    with pytest.raises(SpecError, match=re.escape("refs.py:shape has shape [3], which does not "
                                                  "broadcast to the output's [8]")):
        Checker(spec.checks[0], (8,), FP32, inputs_of(spec), spec.expression_env())
    spec = load_spec(write_spec(REFERENCE_SPEC))
    (tmp_path / "refs.py").write_text(REFS.replace('"y": x * vars["SCALE"]', '"w": 1'))
    forget_modules()
    with pytest.raises(SpecError, match=r"returned a dict without 'y' \(it has: w, z\)"):
        Checker(spec.checks[0], (8,), FP32, inputs_of(spec), spec.expression_env())


def test_a_sweep_computes_a_reference_once_while_its_inputs_stay(write_spec):
    cache = refcache.CACHE

    def reference_of(overrides):
        spec = load_spec(write_spec(MATMUL), overrides)
        checker = Checker(spec.checks[0], spec.buffers["C"].shape, FP32, inputs_of(spec),
                          spec.expression_env(), scope=str(spec.path))
        return checker._reference.array

    first = reference_of({})
    assert (cache.hits, cache.misses) == (0, 1)
    again = reference_of({})
    assert np.shares_memory(again, first) and (cache.hits, cache.misses) == (1, 1)
    reference_of({"N": "40"})                                   # B's shape changed
    assert (cache.hits, cache.misses) == (1, 2)
    reference_of({"M": "64"})                                   # the same values again
    assert (cache.hits, cache.misses) == (2, 2)


def test_a_python_reference_is_kept_while_what_it_read_stays(write_spec, tmp_path):
    (tmp_path / "refs.py").write_text(REFS)
    text = REFERENCE_SPEC.replace("vars: {N: 8, SCALE: 3}", "vars: {N: 8, SCALE: 3, TILE: 1}")
    for tile in ("1", "2", "4"):                                # a var the reference never reads
        spec = load_spec(write_spec(text), {"TILE": tile})
        Checker(spec.checks[0], (8,), FP32, inputs_of(spec), spec.expression_env(),
                scope=str(spec.path))
    assert (tmp_path / "refs.py.calls").read_text() == "x"
    spec = load_spec(write_spec(text), {"SCALE": "4"})          # one it reads
    Checker(spec.checks[0], (8,), FP32, inputs_of(spec), spec.expression_env(),
            scope=str(spec.path))
    assert (tmp_path / "refs.py.calls").read_text() == "xx"


SWEPT = """\
kernel: {cubin: %s, name: add_kernel}
signature: {x: "*fp32", y: "*fp32", out: "*fp32", n: i32}
vars: {N: 4096, BLOCK: 1024}
args:
  x: {shape: [N], init: random}
  y: {shape: [N], init: random}
  out: {shape: [N], init: arange}
  n: N
grid: [cdiv(N, BLOCK)]
check:
  out: {reference: refs.py:unchanged}
  "out[1:-1]": {expect: "roll(out, 1)[2:]"}
"""

UNCHANGED = """\
def unchanged(inputs, vars):
    open(__file__ + ".calls", "a").write("x")
    return inputs["out"]            # the fake runs no kernel: out keeps its input
"""


def test_a_sweep_in_a_worker_process_calls_a_reference_once(tmp_path, capsys, monkeypatch):
    """The whole path on the fake driver, in the worker process a sweep runs in:
    region and Python checks pass, and the reference is made once for 3 points."""
    import json

    from support.cli import run as run_cli
    from support.fake_runs import FAST

    from cubinrun.runs import executor
    from fakecuda import build_fake_driver
    fake = build_fake_driver(tmp_path)
    monkeypatch.setenv("CUBINRUN_LIBCUDA", str(fake.path))
    monkeypatch.setattr(executor, "WORKER_SETUP", "fakecuda.worker:install")
    cubin = REPO / "kernels/build/vector_add.sm_90.cubin"
    (tmp_path / "refs.py").write_text(UNCHANGED)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEPT % cubin)
    code, out, err = run_cli(capsys, "launch", "--json", spec, "--axis", "BLOCK=[128,256,512]",
                             *FAST)
    assert code == 0, err
    results = json.loads(out)["results"]
    assert len(results) == 3
    for result in results:
        outputs = result["check"]["outputs"]
        assert set(outputs) == {"out", "out[1:-1]"} and outputs["out[1:-1]"]["count"] == 4094
        assert all(o["passed"] for o in outputs.values())
    assert (tmp_path / "refs.py.calls").read_text() == "x"


def test_the_report_shows_a_region_key_as_written(tmp_path, capsys, device):
    """A region key such as `out[n:]` is text, not rich markup, in the table."""
    from support.cli import run as run_cli

    cubin = REPO / "kernels/build/vector_add.sm_90.cubin"
    spec = tmp_path / "spec.yaml"
    spec.write_text(SWEPT.replace("vars: {N: 4096, BLOCK: 1024}",
                                  "vars: {N: 4096, BLOCK: 1024, n0: 1}")
                    .replace('"out[1:-1]": {expect: "roll(out, 1)[2:]"}',
                             '"out[n0:]": {expect: "out[n0:] + 1"}')
                    .replace("  out: {reference: refs.py:unchanged}\n", "") % cubin)
    code, out, _ = run_cli(capsys, "launch", spec, "--no-bench")
    assert code == 1
    assert "out[n0:]" in out and "out[n0:][1]: got 1.0, expected 2.0" in out
