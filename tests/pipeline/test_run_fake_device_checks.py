"""Device checks against host checks through the whole `cubinrun launch` on the
fake driver, for many dtypes, inits and expressions: the vector-add cubin's
buffers retyped (`dtype:`), the fake kernel writing nothing, so the outputs keep
their inits and the checks pass or fail by those. The device's kernels are their
host build (tests/support/hostcxx.py); the reports must be the same on both paths."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import hostcxx
from support.hostcxx import same_json
from cubinrun.cli import main

from support.repo import REPO
pytestmark = pytest.mark.skipif(hostcxx.compiler() is None, reason="no host C++ compiler")

SPEC = """
kernel: {{cubin: {repo}/kernels/build/vector_add.sm_90.cubin, name: add_kernel}}
signature: {{x: "*fp32", y: "*fp32", out: "*fp32", n: i32}}
vars: {{N: 5000, A: 3, S: 0.5}}
args:
  x: {{shape: [N], dtype: {xt}, init: {xi}}}
  y: {{shape: [N], dtype: {yt}, init: {yi}}}
  out: {{shape: [N], dtype: {ot}, init: {oi}}}
  n: N
grid: [1]
launch: {{num_warps: 4}}
check:
  out: {check}
"""

CASES = [
    # x type, x init, y type, y init, out type, out init, check
    ("fp32", "random", "fp32", "{random: normal, seed: 3}", "fp32", "{file: OUT}",
     "{expect: x + y}"),
    ("fp16", "random", "bf16", "{random: normal, std: 2.0}", "fp32", "arange",
     "{expect: A * x - y, rtol: 0.5, atol: 100}"),
    ("i16", "{random: uniform, low: -300, high: 300}", "i8", "random", "i16", "arange",
     "{expect: x * A + y}"),
    ("i32", "arange", "u8", "random", "i32", "arange", "{expect: x, exact: true}"),
    ("fp64", "{random: normal, mean: 1.0, std: 0.1}", "fp64", "ones", "fp64", "ones",
     "{expect: where(x > 1, y, x * S), nan_ok: true}"),
    ("fp32", "arange", "fp32", "ones", "i1", "random", "{expect: x > N / 2}"),
    ("i64", "{random: uniform, low: -100000, high: 100000}", "i32", "arange", "u8", "arange",
     "{expect: max(x, y) - min(x, 7)}"),
    ("fp16", "random", "fp16", "random", "fp16", "random", "{expect: abs(x - y), exact: true}"),
    ("bf16", "arange", "fp32", "random", "bf16", "arange", "{expect: sqrt(x) * sqrt(x)}"),
    ("u16", "random", "fp32", "random", "fp32", "zeros", "{expect: x / y, rtol: 0.1}"),
    ("fp32", "random", "fp32", "random", "fp32", "zeros", "{expect: 0}"),
    ("fp32", "random", "fp32", "random", "i32", "{fill: 7}", "{expect: A + 4}"),
    ("fp32", "random", "fp32", "random", "fp32", "arange", "{expect: out * 1 - x + x}"),
    ("u32", "{random: uniform, low: 0, high: 4294967296}", "i64", "arange", "u32", "random",
     "{expect: x + y, exact: true}"),
    ("fp64", "{fill: .nan}", "fp64", "{fill: .inf}", "fp64", "{fill: .nan}",
     "{expect: x + 0 * y, nan_ok: true}"),
]


@pytest.fixture
def emulated(monkeypatch):
    return hostcxx.emulate_device_data(monkeypatch)


def run(capsys, monkeypatch, spec: Path, where: str) -> tuple[int, dict]:
    monkeypatch.setenv("CUBINRUN_DATA", where)
    with pytest.raises(SystemExit) as done:
        main(["launch", "--json", str(spec), "--no-bench"])
    return done.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", CASES, ids=[c[-1] for c in CASES])
def test_device_and_host_checks_agree(case, device, fake_libcuda, emulated, capsys,
                                      monkeypatch, tmp_path):
    import numpy as np
    xt, xi, yt, yi, ot, oi, check = case
    out_file = tmp_path / "out.npy"             # x + y exactly, but for a few elements
    if "OUT" in oi:
        from cubinrun.hostdata.values import input_values
        from cubinrun.dtypes import ELEMENT_TYPES as T
        from cubinrun.specfile.model import BufferArg, Init
        x = input_values(BufferArg("x", T["fp32"], (5000,), Init("random")), 0).whole()
        y = input_values(BufferArg("y", T["fp32"], (5000,), Init(
            "random", distribution="normal", seed=3)), 1).whole()
        out = (x.astype(np.float64) + y).astype(np.float32)
        out[[7, 4000]] += 1e-3
        np.save(out_file, out)
        oi = oi.replace("OUT", str(out_file))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(repo=REPO, xt=xt, xi=xi, yt=yt, yi=yi, ot=ot, oi=oi,
                                check=check))
    code_host, host = run(capsys, monkeypatch, spec, "host")
    assert "cr_check" not in emulated
    code_device, on_device = run(capsys, monkeypatch, spec, "device")
    assert "cr_check" in emulated, "the check stayed on the host"
    assert code_host == code_device and same_json(host["check"], on_device["check"])


WHOLE = """
kernel: {{cubin: {repo}/kernels/build/vector_add.sm_90.cubin, name: add_kernel}}
signature: {{x: "*fp32", y: "*fp32", out: "*fp32", n: i32}}
vars: {{M: 96}}
args:
  x: {{shape: [M, M], init: random}}
  y: {{shape: [M, M], init: {{random: normal}}}}
  out: {{shape: [M, M], dtype: {ot}, init: {{file: {out}}}}}
  n: M
grid: [1]
launch: {{num_warps: 4}}
check:
  out: {check}
"""


@pytest.mark.parametrize("text,options,ot,on_device", [
    ("x @ y", ", rtol: 1e-3, atol: 1e-2", "fp32", True),
    ("x @ y", "", "fp64", True),                        # the atol a sum earns: max |reference|
    ("cumsum(x, axis=1)", ", exact: true", "fp32", True),
    ("x.T @ y", "", "fp32", True),
    ("transpose(x)", "", "fp32", False),                # a view: not contiguous, the host's
])
def test_whole_references_compared_on_the_device(text, options, ot, on_device, device,
                                                 fake_libcuda, emulated, capsys, monkeypatch,
                                                 tmp_path):
    """The host makes a whole reference once; the device compares the output with
    it (the output never comes back): the same report as the host's comparison."""
    import numpy as np
    from cubinrun.dtypes import ELEMENT_TYPES as T
    from cubinrun.hostdata.values import input_values
    from cubinrun.specfile.model import BufferArg, Init
    from cubinrun.specfile.expr import parse_expr
    x = input_values(BufferArg("x", T["fp32"], (96, 96), Init("random")), 0).whole()
    y = input_values(BufferArg("y", T["fp32"], (96, 96), Init("random", distribution="normal")),
                     1).whole()
    expect = f"{{expect: \"{text}\"{options}}}"
    reference = np.asarray(parse_expr(text, arrays=True).evaluate(
        {"x": x.astype(np.float64), "y": y.astype(np.float64)}))
    out = reference.astype(T[ot].numpy_dtype())
    out[3, 5] += 0.5                                    # fails, whatever the tolerance
    out[90, 1] = np.nan
    np.save(tmp_path / "out.npy", out)
    spec = tmp_path / "spec.yaml"
    spec.write_text(WHOLE.format(repo=REPO, ot=ot, out=tmp_path / "out.npy", check=expect))
    code_host, host = run(capsys, monkeypatch, spec, "host")
    code_device, on_dev = run(capsys, monkeypatch, spec, "device")
    assert ("cr_check" in emulated) == on_device
    assert code_host == code_device == 1 and same_json(host["check"], on_dev["check"])
    assert on_dev["check"]["outputs"]["out"]["mismatches"] >= 2


def test_a_kept_reference_is_uploaded_once_while_its_refcache_entry_lives(device, monkeypatch):
    """The points of a sweep whose inputs do not change share the host's reference
    (refcache.py's entry, its array viewed anew each run) and so, on the device,
    its one upload, kept by the session until another replaces it or it closes."""
    import numpy as np
    from cubinrun.gpu import device_data, driver
    from cubinrun.hostdata.whole_reference import Made
    uploads, freed = [], []
    real_copy, real_free = driver.copy_to_device, driver.free_quietly
    monkeypatch.setattr(driver, "copy_to_device",
                        lambda pointer, array: (uploads.append(array.nbytes),
                                                real_copy(pointer, array)))
    monkeypatch.setattr(driver, "free_quietly",
                        lambda pointer: (freed.append(pointer), real_free(pointer)))
    made = Made(np.arange(12.0).reshape(3, 4))
    kept = device_data.KeptReference()
    first = kept.pointer(made, np.broadcast_to(made.value, (3, 4)))
    again = kept.pointer(made, np.broadcast_to(made.value, (3, 4)))     # the next point's view
    assert first == again and uploads == [96] and freed == []
    other = Made(np.zeros((3, 4)))
    kept.pointer(other, other.value)                                    # inputs changed
    assert uploads == [96, 96] and freed == [first]
    kept.close()
    assert len(freed) == 2
    monkeypatch.setattr(device_data.KeptReference, "ROOM", 1 << 62)   # no room: the host's
    assert device_data.KeptReference().pointer(made, made.value) is None


def test_a_bias_that_broadcasts_is_checked_on_the_device(device, fake_libcuda, emulated, capsys,
                                                         monkeypatch, tmp_path):
    import numpy as np
    text = WHOLE.replace("y: {{shape: [M, M], init: {{random: normal}}}}",
                         "y: {{shape: [M], dtype: bf16, init: {{random: normal}}}}")
    np.save(tmp_path / "out.npy", np.ones((96, 96), np.float32))
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.format(repo=REPO, ot="fp32", out=tmp_path / "out.npy",
                                check="{expect: x + y, atol: 1.5, rtol: 0}"))
    code_host, host = run(capsys, monkeypatch, spec, "host")
    code_device, on_dev = run(capsys, monkeypatch, spec, "device")
    assert "cr_check" in emulated
    assert code_host == code_device == 1 and same_json(host["check"], on_dev["check"])
