"""What a Triton entry was specialized for: tt.divisibility of integers and
pointers, and arguments folded away, checked on entries from every release."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cubinrun.errors import SpecError
from cubinrun.plan.make import make_plan
from cubinrun.specfile import load_spec
from cubinrun.plan.specialization import check_addresses, check_plan
from support.repo import REPO

FIXTURES = REPO / "tests" / "fixtures" / "triton"
NAMED = ["3.5.1", "3.6.0", "3.7.1", "3.8.0", "3.9.0"]     # 3.4's TTIR names no parameter

FOLD = """\
kernel: {{triton: {entry}}}
vars: {{N: 4096}}
args:
  x_ptr: {{shape: [N], init: random{x_extra}}}
  out_ptr: {{shape: [N]}}
  n: N
  stride: {stride}
grid: [cdiv(N, 256)]
check:
  out_ptr: {{expect: 2 * x_ptr}}
"""


def fold_spec(tmp_path, version="3.9.0", stride="1", x_extra="", **overrides) -> Path:
    entry = FIXTURES / version / "fold_kernel" / "fold_kernel.json"
    path = tmp_path / "fold.yaml"
    path.write_text(FOLD.format(entry=entry, stride=stride, x_extra=x_extra))
    return path


def checked(path, overrides=None):
    spec = load_spec(path, overrides)
    plan = make_plan(spec)
    check_plan(plan)
    return plan


@pytest.mark.parametrize("version", NAMED)
def test_a_folded_argument_with_its_value_is_dropped_with_a_note(tmp_path, version):
    plan = checked(fold_spec(tmp_path, version))
    assert [s.leaf.path for s in plan.slots] == ["x_ptr", "out_ptr", "n"]
    assert any("args.stride = 1 dropped: Triton folded it" in n for n in plan.spec.notes)
    assert plan.to_json()["notes"] == list(plan.spec.notes)
    assert plan.spec.divisibility == (16, 16, 16)


@pytest.mark.parametrize("stride, shown", [("2", "2"), ("N", "4096"), ("0.5", "0.5"),
                                           ("true", "a boolean"), ("{shape: [4]}", "a buffer")])
def test_a_folded_argument_with_another_value_is_refused(tmp_path, stride, shown):
    path = fold_spec(tmp_path, stride=stride)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    error = err.value
    assert error.field == "args.stride" and error.line == 7
    assert error.message.startswith(f"{shown}: the Triton entry has no parameter stride: "
                                    "Triton's JIT folded it")
    assert "only computes stride == 1" in error.message
    assert "do_not_specialize=['stride']" in error.message


def test_null_is_what_triton_folds_a_none_to(tmp_path):
    plan = checked(fold_spec(tmp_path, stride="null"))
    assert any("args.stride = null dropped" in n for n in plan.spec.notes)


@pytest.mark.parametrize("version", NAMED + ["3.4.0"])
def test_an_integer_that_breaks_its_divisibility_is_refused(tmp_path, version):
    path = fold_spec(tmp_path, version)
    if version == "3.4.0":                  # names arg0.. and no fold visible by name
        text = path.read_text().replace("x_ptr", "arg0").replace("out_ptr", "arg1")
        path.write_text(text.replace("  n: N", "  arg2: N").replace("  stride: 1\n", ""))
    checked(path)                           # N = 4096: a multiple of 16
    with pytest.raises(SpecError) as err:
        checked(path, {"N": "500"})
    message = str(err.value)
    name = "arg2" if version == "3.4.0" else "n"
    assert f"fold.yaml:6: args.{name}: 500 is not a multiple of 16, but the Triton entry was " \
           f"compiled for {name} % 16 == 0 (tt.divisibility = 16): pass a multiple of 16, or " \
           f"recompile the kernel for this value (do_not_specialize=['{name}']" in message


def test_a_pointer_offset_that_breaks_its_alignment_is_refused(tmp_path):
    checked(fold_spec(tmp_path, x_extra=", offset: 4"))      # 16 bytes: still aligned
    plan = checked(fold_spec(tmp_path, x_extra=", offset: 4"))
    assert plan.to_json()["buffers"][0]["offset"] == 4
    assert plan.device_bytes == 4 * (4096 * 2 + 4)
    with pytest.raises(SpecError) as err:
        checked(fold_spec(tmp_path, x_extra=", offset: 1"))
    assert err.value.field == "args.x_ptr" and err.value.line == 4
    assert err.value.message.startswith(
        "offset: 1 puts it 4 bytes (1 x 4) past an aligned allocation, but the Triton entry "
        "was compiled for x_ptr 16-byte aligned (tt.divisibility = 16)")
    assert "do_not_specialize_on_alignment=['x_ptr']" in err.value.message


def test_device_addresses_are_checked_once_allocated(tmp_path):
    plan = checked(fold_spec(tmp_path))
    check_addresses(plan, [0x7F0000000000, 0x7F0000100000, 4096])
    with pytest.raises(SpecError, match=r"args\.out_ptr: its device address 0x7f0000100008 is "
                                        r"8 bytes past a multiple of 16, but the Triton entry"):
        check_addresses(plan, [0x7F0000000000, 0x7F0000100008, 4096])


def test_kernels_without_specializations_are_not_checked(tmp_path, write_spec):
    from cubinrun.specfile.loader import load_spec as load
    spec = load(fold_spec(tmp_path))
    assert spec.divisibility is not None
    plain = load_spec(write_spec("""\
kernel: {cubin: k.cubin}
signature: {n: i32}
args: {n: 3}
grid: [1]
"""))
    assert plain.divisibility is None
    check_plan(make_plan(plain))


def test_a_spec_signature_declaring_a_folded_parameter_is_told_why(tmp_path):
    entry = FIXTURES / "3.9.0" / "fold_kernel" / "fold_kernel.json"
    text = f"""\
kernel: {{triton: {entry}}}
signature: {{x_ptr: "*fp32", out_ptr: "*fp32", n: i32, stride: STRIDE}}
args: {{x_ptr: {{shape: [64]}}, out_ptr: {{shape: [64]}}, n: 64, stride: 1}}
grid: [1]
"""
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("STRIDE", "i32"))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert err.value.field == "signature.stride"
    assert "the Triton entry has no parameter stride: Triton's JIT folded it" in str(err.value)
    assert "declare it `constexpr`" in str(err.value)
    path.write_text(text.replace("STRIDE", "constexpr"))
    plan = checked(path)                        # a constexpr: recorded, not passed
    assert [s.leaf.path for s in plan.slots] == ["x_ptr", "out_ptr", "n"]
    assert plan.spec.divisibility == (16, 16, 16)
    # the same parameters under other names are the spec's choice
    path.write_text(text.replace("x_ptr", "x").replace(", stride: STRIDE", "")
                    .replace(", stride: 1", ""))
    assert checked(path).spec.divisibility == (16, 16, 16)


def test_the_plan_json_of_a_newer_release_carries_its_note(tmp_path):
    src = FIXTURES / "3.9.0" / "fold_kernel"
    for suffix in (".cubin", ".source"):
        (tmp_path / f"fold_kernel{suffix}").write_bytes((src / f"fold_kernel{suffix}").read_bytes())
    meta = json.loads((src / "fold_kernel.json").read_text())
    (tmp_path / "fold_kernel.json").write_text(json.dumps({**meta, "triton_version": "4.0.1"}))
    path = tmp_path / "fold.yaml"
    path.write_text(FOLD.format(entry=tmp_path / "fold_kernel.json", stride=1, x_extra=""))
    notes = checked(path).to_json()["notes"]
    assert notes[0].startswith("Triton 4.0.1 is newer than the releases cubinrun knows")


CONFIGS = REPO / "configs"
SAMPLES = ["triton_matmul.yaml", "triton_softmax.yaml", "triton_layer_norm.yaml"]


@pytest.mark.parametrize("key, value, ok", [
    ("num_stages", "3", True), ("num_stages", "1 + 2", True), ("num_stages", "2", False),
    ("maxnreg", "null", True), ("maxnreg", "128", False),
    ("enable_fp_fusion", "true", True), ("enable_fp_fusion", "false", False),
    ("launch_pdl", "false", True), ("launch_pdl", "0", False),
    ("arch", "sm90", True), ("triton_version", "'3.9.0'", True),
    ("sched4reg", "false", True),                   # a key only 3.9 writes
])
def test_launch_may_repeat_any_key_of_the_entry_json(tmp_path, key, value, ok):
    path = fold_spec(tmp_path)
    path.write_text(path.read_text() + f"launch: {{{key}: {value}}}\n")
    if ok:
        load_spec(path)
        return
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert err.value.field == f"launch.{key}" and err.value.line == 11
    assert "contradicts the Triton entry" in err.value.message
    assert f"compiled with {key} =" in err.value.message


def test_a_key_the_entry_does_not_have_is_still_unknown(tmp_path):
    path = fold_spec(tmp_path, version="3.5.1")
    path.write_text(path.read_text() + "launch: {sched4reg: false}\n")   # 3.9's, not 3.5's
    with pytest.raises(SpecError, match="unknown key 'sched4reg'"):
        load_spec(path)


@pytest.mark.parametrize("config", SAMPLES)
def test_the_triton_samples_plan_without_a_gpu(config, capsys):
    from cubinrun.cli import main
    with pytest.raises(SystemExit) as done:
        main(["launch", str(CONFIGS / config), "--dry-run", "--json", "--arch", "sm_90"])
    plan = json.loads(capsys.readouterr().out)
    assert done.value.code == 0
    if config == "triton_matmul.yaml":
        assert plan["shared"] == 98304 and plan["num_warps"] == 8
        assert [p["name"] for p in plan["params"]][-3:] == ["stride_am", "stride_bk", "stride_cm"]
        assert len(plan["notes"]) == 3
    if config == "triton_softmax.yaml":
        assert plan["grid"] == [528, 1, 1] and plan["device_values"]["values"] == {"sm_count": 132}


@pytest.mark.parametrize("config, overrides, field", [
    ("triton_matmul.yaml", ["--set", "M=500"], "args.M"),
    ("triton_matmul.yaml", ["--set", "K=200"], "args.K"),
    ("triton_softmax.yaml", ["--set", "ROWS=810"], "args.n_rows"),
    ("triton_layer_norm.yaml", ["--set", "COLS=760"], "args.stride"),
])
def test_the_samples_refuse_what_breaks_their_specialization(config, overrides, field, capsys):
    from cubinrun.cli import main
    with pytest.raises(SystemExit) as done:
        main(["launch", str(CONFIGS / config), "--dry-run", "--arch", "sm_90", *overrides])
    err = capsys.readouterr().err
    assert done.value.code == 2 and f"{field}: " in err and "not a multiple of 16" in err
