"""Checks: tolerances and their boundary, NaN / inf rules, exact bits, broadcasting,
integer wrapping, reported mismatches, file references."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from cubinrun.hostdata import check as check_module
from cubinrun.hostdata.check import DEFAULT_TOLERANCES, CheckResult, Mismatch, run_check, summarize
from cubinrun.dtypes import ELEMENT_TYPES
from cubinrun.errors import SpecError
from cubinrun.specfile.expr import parse_expr
from cubinrun.hostdata.values import encode_fp8e4b15
from cubinrun.specfile.model import Check

T = ELEMENT_TYPES
NAN, INF = float("nan"), float("inf")


def check(output, dtype: str, expect: str | None = None, inputs=None, scalars=None,
          input_types=None, **options) -> CheckResult:
    spec = Check("out", expect=parse_expr(expect, arrays=True) if expect else None, **options)
    return run_check(spec, np.asarray(output), T[dtype], inputs or {}, scalars or {},
                     input_types)


def against(expected, output, dtype: str, **options) -> CheckResult:
    """Output checked against `expect: ref` where ref holds `expected` as float64."""
    ref = np.asarray(expected, dtype=np.float64)
    return check(np.asarray(output).astype(T[dtype].numpy_dtype()), dtype, "ref",
                 {"ref": ref}, **options)


# ---------------------------------------------------------------- passing and failing

def test_fp32_sum_passes_and_reports_zero_error():
    x = (np.arange(12, dtype=np.float32) / 4 - 1).reshape(3, 4)     # sums exact in fp32
    y = np.full((3, 4), 0.25, np.float32)
    result = check(x + y, "fp32", "x + y", {"x": x, "y": y})
    assert result.passed and result.count == 12 and result.mismatches == 0
    assert result.max_abs_err == 0.0 and result.max_rel_err == 0.0
    assert (result.rtol, result.atol, result.exact) == (1e-5, 1e-6, False)


def test_expect_uses_vars_and_functions():
    x = np.array([0.0, 1.0, 4.0], np.float32)
    result = check(np.sqrt(x) * 3, "fp32", "sqrt(x) * N", {"x": x}, {"N": 3})
    assert result.passed


def test_tolerance_boundary_is_inclusive():
    # |out - ref| <= atol + rtol * |ref| = 0.25 + 0.5 * 1.0, all exact in float64
    assert against([1.0], [1.75], "fp64", rtol=0.5, atol=0.25).passed
    assert against([1.0], [0.25], "fp64", rtol=0.5, atol=0.25).passed
    failed = against([1.0], [np.nextafter(1.75, 2.0)], "fp64", rtol=0.5, atol=0.25)
    assert not failed.passed and failed.mismatches == 1


def test_fp16_default_tolerance_allows_one_ulp_not_three():
    one_ulp = 1.0 + 2.0 ** -10                 # relative error 9.8e-4 <= 1e-3 + 1e-5
    three_ulp = 1.0 + 3 * 2.0 ** -10
    assert against([1.0], [one_ulp], "fp16").passed
    assert not against([1.0], [three_ulp], "fp16").passed


@pytest.mark.parametrize("dtype", list(DEFAULT_TOLERANCES))
def test_default_tolerances_by_dtype(dtype):
    result = against([1.0], [1.0], dtype)
    assert (result.rtol, result.atol) == DEFAULT_TOLERANCES[dtype] and not result.exact


def test_default_table_values():
    assert DEFAULT_TOLERANCES["fp64"] == (1e-10, 1e-12)
    assert DEFAULT_TOLERANCES["fp32"] == (1e-5, 1e-6)
    assert DEFAULT_TOLERANCES["fp16"] == (1e-3, 1e-5)
    assert DEFAULT_TOLERANCES["bf16"] == (1e-2, 1e-4)
    assert DEFAULT_TOLERANCES["fp8e4nv"][0] == DEFAULT_TOLERANCES["fp8e4b15"][0] == 0.125
    assert DEFAULT_TOLERANCES["fp8e5"][0] == 0.25


def test_a_given_rtol_keeps_the_default_atol():
    result = against([100.0], [101.0], "fp32", rtol=0.02)
    assert result.passed and (result.rtol, result.atol) == (0.02, 1e-6)
    assert against([0.0], [1e-7], "fp32", rtol=0.02).passed         # atol 1e-6 still there
    assert not against([0.0], [1e-7], "fp32", rtol=0.02, atol=0.0).passed


# ---------------------------------------------------------------- NaN and inf

def test_nan_never_passes_without_nan_ok():
    assert not against([NAN], [NAN], "fp32").passed
    assert against([NAN, 1.0], [NAN, 1.0], "fp32", nan_ok=True).passed
    assert not against([1.0], [NAN], "fp32", nan_ok=True).passed
    assert not against([NAN], [1.0], "fp32", nan_ok=True).passed
    assert not against([NAN], [1.0], "fp32", rtol=INF).passed


def test_infinities_pass_only_when_equal():
    assert against([INF, -INF], [INF, -INF], "fp32").passed
    assert not against([INF], [-INF], "fp32").passed
    assert not against([INF], [3e38], "fp32", rtol=1.0).passed
    assert not against([1.0], [INF], "fp32", rtol=1e30).passed


def test_errors_are_over_finite_pairs():
    result = against([INF, NAN, 2.0, 0.0], [INF, NAN, 2.5, 0.125], "fp32", nan_ok=True)
    assert not result.passed and result.mismatches == 2
    assert result.max_abs_err == 0.5
    assert result.max_rel_err == 0.25                 # the pair with expected 0 counts 0
    nothing_finite = against([NAN, INF], [NAN, 1.0], "fp32")
    assert nothing_finite.max_abs_err is None and nothing_finite.max_rel_err is None


# ---------------------------------------------------------------- exact

def test_exact_compares_bits_so_signed_zeros_differ():
    assert against([0.0], [-0.0], "fp32").passed
    exact = against([0.0], [-0.0], "fp32", exact=True)
    assert not exact.passed and exact.exact and (exact.rtol, exact.atol) == (0.0, 0.0)
    assert exact.first_mismatches[0].output == 0.0 and exact.max_abs_err == 0.0
    assert against([-0.0, 2.5], [-0.0, 2.5], "fp32", exact=True).passed


def test_exact_bf16_rounds_the_reference_to_nearest_even():
    # 1 + 2**-8 lies halfway between bf16 1.0 and 1.0078125: even is 1.0
    # 1 + 3 * 2**-8 lies halfway between 1.0078125 (odd) and 1.015625 (even)
    ref = [1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8]
    assert against(ref, [1.0, 1.015625], "bf16", exact=True).passed
    wrong = against(ref, [1.0078125, 1.015625], "bf16", exact=True)
    assert wrong.mismatches == 1 and wrong.first_mismatches[0] == Mismatch((0,), 1.0078125, 1.0)
    assert against(ref, [1.0078125, 1.015625], "bf16").passed       # within rtol 1e-2


def test_exact_fp8e4b15_compares_raw_bytes():
    out = encode_fp8e4b15([1.0, -0.5, 1.875])
    assert check(out, "fp8e4b15", "ref", {"ref": np.array([1.0, -0.5, 1.9])}, exact=True).passed
    failed = check(out, "fp8e4b15", "ref", {"ref": np.array([1.0, -0.5, 5.0])}, exact=True)
    assert failed.mismatches == 1 and failed.first_mismatches[0] == Mismatch((2,), 1.875, 5.0)


def test_exact_reference_that_overflows_to_nan_never_matches():
    out = np.array([NAN], dtype=ml_dtypes.float8_e4m3fn)
    assert not check(out, "fp8e4nv", "ref", {"ref": np.array([1000.0])}, exact=True,
                     nan_ok=True).passed
    assert check(out, "fp8e4nv", "ref", {"ref": np.array([NAN])}, exact=True, nan_ok=True).passed
    assert not check(out, "fp8e4nv", "ref", {"ref": np.array([NAN])}, exact=True).passed


# ---------------------------------------------------------------- broadcasting

def test_scalar_expect_broadcasts():
    out = np.full((3, 5), 2.5, np.float32)
    result = check(out, "fp32", "2.5")
    assert result.passed and result.count == 15
    assert check(np.full((4,), 7, np.int32), "i32", "N", scalars={"N": 7}).passed


def test_partial_broadcast():
    row = np.arange(4, dtype=np.float32)
    out = np.tile(row, (3, 1))
    assert check(out, "fp32", "row", {"row": row}).passed


def test_reference_that_does_not_broadcast_is_an_error():
    x = np.zeros(5, np.float32)
    with pytest.raises(SpecError, match=r"shape \[5\].*\[3, 4\]") as info:
        check(np.zeros((3, 4), np.float32), "fp32", "x + 1", {"x": x})
    assert info.value.field == "check.out.expect"


def test_expression_errors_are_located():
    with pytest.raises(SpecError, match="unknown name 'z'") as info:
        check(np.zeros(2, np.float32), "fp32", "z + 1")
    assert info.value.field == "check.out.expect"


# ---------------------------------------------------------------- reported mismatches

def test_mismatch_indices_and_values_are_reported():
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = expected.copy()
    out[0, 1], out[2, 3] = 100.0, -1.0
    result = check(out, "fp32", "x", {"x": expected})
    assert result.mismatches == 2 and not result.passed
    assert result.first_mismatches == (Mismatch((0, 1), 100.0, 1.0), Mismatch((2, 3), -1.0, 11.0))
    assert result.max_abs_err == 99.0 and result.max_rel_err == 99.0


def test_at_most_eight_mismatches_in_flat_order_across_blocks(monkeypatch):
    monkeypatch.setattr(check_module, "CHUNK", 5)
    out = np.zeros((4, 6), np.float32)
    bad = [(0, 4), (0, 5), (1, 0), (1, 3), (2, 2), (2, 5), (3, 0), (3, 1), (3, 2), (3, 5)]
    for i in bad:
        out[i] = 1.0
    result = check(out, "fp32", "0.0")
    assert result.mismatches == 10 and result.count == 24
    assert [m.index for m in result.first_mismatches] == bad[:8]
    assert all(m.output == 1.0 and m.expected == 0.0 for m in result.first_mismatches)


def test_to_json_keys_and_json_safe_values():
    result = against([1.0, NAN], [INF, 2.0], "fp32")
    data = result.to_json()
    assert set(data) == {"passed", "max_abs_err", "max_rel_err", "mismatches", "count", "rtol",
                         "atol", "exact", "first_mismatches"}
    assert data["first_mismatches"] == [[[0], "inf", 1.0], [[1], 2.0, "nan"]]
    assert data["max_abs_err"] is None
    json.dumps(data, allow_nan=False)


def test_summarize():
    ok = against([1.0], [1.0], "fp32")
    bad = against([1.0], [2.0], "fp32")
    assert summarize([]) is None
    assert summarize([ok, ok]) is True
    assert summarize([ok, bad]) is False


# ---------------------------------------------------------------- integers

def test_integers_compare_exactly_by_default():
    x = np.array([1, 2, 3], np.int32)
    result = check(x * 2, "i32", "x * 2", {"x": x})
    assert result.passed and result.exact and (result.rtol, result.atol) == (0.0, 0.0)
    off = check(np.array([2, 4, 7], np.int32), "i32", "x * 2", {"x": x})
    assert off.first_mismatches == (Mismatch((2,), 7, 6),)
    assert isinstance(off.first_mismatches[0].output, int)


def test_integer_reference_wraps_like_the_kernel_store():
    x = np.array([2 ** 31 - 1, 5], np.int32)
    y = np.array([1, 1], np.int32)
    out = (x + y)                                        # int32: wraps to -2**31
    assert out[0] == -2 ** 31
    assert check(out, "i32", "x + y", {"x": x, "y": y}).passed
    u8 = np.array([200, 3], np.uint8)
    assert check(np.array([144, 6], np.uint8), "u8", "a * 2", {"a": u8}).passed   # 400 % 256


def test_u64_inputs_stay_exact_and_wrap():
    x = np.array([2 ** 64 - 1, 2 ** 63 + 1], np.uint64)
    assert check(x.copy(), "u64", "x", {"x": x}).passed
    assert check(np.array([0, 2 ** 63 + 2], np.uint64), "u64", "x + 1", {"x": x}).passed
    wrong = check(np.array([1, 2 ** 63 + 2], np.uint64), "u64", "x + 1", {"x": x})
    assert wrong.first_mismatches == (Mismatch((0,), 1, 0),)


def test_float_reference_meets_integers_by_value():
    x = np.array([4, 5], np.int32)
    result = check(np.array([2, 2], np.int32), "i32", "x / 2", {"x": x})
    assert result.mismatches == 1 and result.first_mismatches == (Mismatch((1,), 2, 2.5),)
    assert check(np.array([2, 2], np.int32), "i32", "x // 2", {"x": x}).passed


def test_integer_tolerance_when_given():
    assert check(np.array([101], np.int32), "i32", "100", rtol=0.01).passed
    assert not check(np.array([102], np.int32), "i32", "100", rtol=0.01).passed


@pytest.mark.parametrize("dtype", ["i1", "u1"])
def test_boolean_outputs_expect_nonzero(dtype):
    x = np.array([-1.0, 0.0, 2.0])
    host = T[dtype].numpy_dtype()
    assert check(np.array([0, 0, 1], host), dtype, "x > 0", {"x": x}).passed
    assert check(np.array([1, 0, 1], host), dtype, "x", {"x": x}).passed      # float: != 0 too
    assert check(np.array([1, 0, 1], host), dtype, "n", {"n": np.array([-3, 0, 256])}).passed
    assert not check(np.array([0, 0, 2], host), dtype, "x > 0", {"x": x}).passed


# ---------------------------------------------------------------- inputs of narrow types

def test_fp8e4b15_inputs_are_read_as_values_with_their_types():
    bits = encode_fp8e4b15([1.0, 1.5, -0.25])
    out = np.array([2.0, 3.0, -0.5], np.float32)
    assert check(out, "fp32", "x * 2", {"x": bits}, input_types={"x": T["fp8e4b15"]}).passed


def test_bf16_inputs_are_upcast_exactly():
    x = np.array([1.0078125, 3.0], dtype=ml_dtypes.bfloat16)
    out = np.array([1.0078125 ** 2, 9.0], np.float64)
    assert check(out, "fp64", "x * x", {"x": x}, exact=True).passed


# ---------------------------------------------------------------- file references

def test_file_reference(tmp_path):
    np.save(tmp_path / "ref.npy", np.array([[1.0, 2.0], [3.0, 4.0]]))
    spec = Check("out", file=tmp_path / "ref.npy")
    out = np.array([[1.0, 2.0], [3.0, 4.5]], np.float32)
    result = run_check(spec, out, T["fp32"], {}, {})
    assert result.first_mismatches == (Mismatch((1, 1), 4.5, 4.0),)


def test_file_reference_shape_must_match(tmp_path):
    np.save(tmp_path / "ref.npy", np.zeros(4))
    spec = Check("out", file=tmp_path / "ref.npy")
    with pytest.raises(SpecError, match=r"ref.npy has shape \[4\], the output is \[2, 2\]") as info:
        run_check(spec, np.zeros((2, 2), np.float32), T["fp32"], {}, {})
    assert info.value.field == "check.out.file"


def test_file_reference_in_the_outputs_own_type(tmp_path):
    bits = encode_fp8e4b15([1.0, -1.875])
    np.save(tmp_path / "raw.npy", bits)                       # uint8: fp8e4b15 bytes
    spec = Check("out", file=tmp_path / "raw.npy", exact=True)
    assert run_check(spec, bits.copy(), T["fp8e4b15"], {}, {}).passed
    bf = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
    np.save(tmp_path / "bf.npy", bf)                          # anonymous V2 bytes
    spec = Check("out", file=tmp_path / "bf.npy", exact=True)
    assert run_check(spec, bf.copy(), T["bf16"], {}, {}).passed


def test_unreadable_file_reference_is_an_error(tmp_path):
    spec = Check("out", file=tmp_path / "missing.npy")
    with pytest.raises(SpecError, match="cannot read"):
        run_check(spec, np.zeros(2, np.float32), T["fp32"], {}, {})
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    with pytest.raises(SpecError, match="text.npy holds <U1, not numbers") as info:
        run_check(Check("out", file=tmp_path / "text.npy"), np.zeros(2, np.float32), T["fp32"],
                  {}, {})
    assert info.value.field == "check.out.file"
