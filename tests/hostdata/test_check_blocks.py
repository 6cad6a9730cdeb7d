"""The check in blocks reports exactly what the whole-array check reports: one
block of the whole output is the whole-array evaluation, and every smaller
block size (rows split, boxes of a broadcast, blocks of one element) must give
the same counts, extremes, first mismatches and errors."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from cubinrun.hostdata import check as check_module
from cubinrun.hostdata.check import boxes, run_check
from cubinrun.dtypes import ELEMENT_TYPES as T
from cubinrun.errors import SpecError
from cubinrun.specfile.expr import parse_expr
from cubinrun.hostdata.values import encode_fp8e4b15, input_values
from cubinrun.specfile.model import BufferArg, Check, Init

NAN, INF = float("nan"), float("inf")
SIZES = [1, 3, 7, 64]


def results(monkeypatch, output, dtype, expect=None, inputs=None, scalars=None,
            input_types=None, **options) -> list[dict]:
    """The check's JSON with one block of everything, then with each of SIZES."""
    spec = Check("out", expect=parse_expr(expect, arrays=True) if expect else None, **options)
    reports = []
    for size in [output.size + 1, *SIZES]:
        monkeypatch.setattr(check_module, "CHUNK", size)
        result = run_check(spec, output, T[dtype], inputs or {}, scalars or {}, input_types)
        reports.append(json.dumps(result.to_json()))
    return reports


def same_everywhere(reports: list[str]) -> dict:
    assert all(r == reports[0] for r in reports[1:]), reports
    return json.loads(reports[0])


def test_floats_with_nan_inf_and_many_mismatches(monkeypatch):
    rng = np.random.default_rng(1)
    ref = rng.normal(size=200)
    out = (ref + rng.normal(scale=1e-7, size=200)).astype(np.float32)
    ref[[5, 17]] = NAN
    out[[17, 40]] = NAN                       # NaN on both sides at 17, one side at 5 and 40
    ref[[60, 61]] = INF
    out[[60, 61, 62]] = [INF, -INF, INF]      # equal, opposite, against a finite value
    out[100:120] += 1.0                       # a run of plain mismatches across blocks
    for nan_ok in (False, True):
        report = same_everywhere(results(monkeypatch, out, "fp32", "ref", {"ref": ref},
                                         nan_ok=nan_ok))
        bad = 2 + 2 + 20 + (0 if nan_ok else 1)      # one-sided NaN, inf, the run, 17 unless ok
        assert report["mismatches"] == bad and len(report["first_mismatches"]) == 8
    finite = np.isfinite(ref) & np.isfinite(out)
    err = np.abs(out[finite].astype(np.float64) - ref[finite])
    assert report["max_abs_err"] == err.max()                 # over finite pairs only


def test_tolerance_count_is_numpys_isclose_rule(monkeypatch):
    rng = np.random.default_rng(2)
    ref = rng.uniform(-1, 1, 1000)
    out = ref + rng.normal(scale=3e-5, size=1000)
    report = same_everywhere(results(monkeypatch, out, "fp64", "ref", {"ref": ref},
                                     rtol=1e-5, atol=1e-5))
    assert report["mismatches"] == np.count_nonzero(~(np.abs(out - ref) <= 1e-5 + 1e-5 *
                                                      np.abs(ref)))


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_exact_bits_signed_zeros_and_nan(monkeypatch, dtype):
    host = T[dtype].numpy_dtype()
    ref = np.array([0.0, -0.0, 1.5, NAN, 2.0 ** -20, 3.0, NAN] * 5)
    out = ref.astype(host)
    out[0], out[2], out[10] = -0.0, 1.25, 7.0
    report = same_everywhere(results(monkeypatch, out, dtype, "ref", {"ref": ref},
                                     exact=True, nan_ok=True))
    assert report["exact"] and report["mismatches"] == 3


def test_fp8e4b15_inputs_and_output(monkeypatch):
    x = encode_fp8e4b15(np.linspace(-1.5, 1.5, 50))
    out = encode_fp8e4b15(np.linspace(-1.5, 1.5, 50) / 2)
    out[7] = encode_fp8e4b15([1.0])[0]
    report = same_everywhere(results(monkeypatch, out, "fp8e4b15", "x / 2", {"x": x},
                                     input_types={"x": T["fp8e4b15"]}, exact=True))
    assert report["mismatches"] == 1 and report["first_mismatches"][0][0] == [7]


def test_integer_wrap_around(monkeypatch):
    x = np.array([2 ** 31 - 1, -2 ** 31, 5, 7] * 9, np.int32)
    y = np.array([1, -1, 2 ** 31 - 1, 3] * 9, np.int32)
    out = x + y                                        # wraps as the kernel's store would
    out[[3, 30]] += 1
    report = same_everywhere(results(monkeypatch, out, "i32", "x + y", {"x": x, "y": y}))
    assert report["mismatches"] == 2 and report["exact"]
    u = np.array([200, 3, 255, 128] * 5, np.uint8)
    report = same_everywhere(results(monkeypatch, (u * 2).astype(np.uint8), "u8", "u * 2",
                                     {"u": u}))
    assert report["mismatches"] == 0
    big = np.array([2 ** 64 - 1, 2 ** 63] * 4, np.uint64)
    report = same_everywhere(results(monkeypatch, big + np.uint64(1), "u64", "big + 1",
                                     {"big": big}))
    assert report["mismatches"] == 0


def test_float_reference_against_integers_and_booleans(monkeypatch):
    x = np.arange(40, dtype=np.int32)
    report = same_everywhere(results(monkeypatch, x // 2, "i32", "x / 2", {"x": x}))
    assert report["mismatches"] == 20                          # odd x: 2.5 is no integer
    v = np.linspace(-2, 2, 33)
    report = same_everywhere(results(monkeypatch, (v > 0).astype(np.int8), "i1", "v >= 0",
                                     {"v": v}))
    assert report["mismatches"] == 1                           # v == 0


def test_broadcast_inputs_in_boxes(monkeypatch):
    row = np.linspace(0, 1, 7)
    column = np.arange(5.0).reshape(5, 1)
    out = (row + column * 10).astype(np.float32)
    out[3, 6] = -1
    out[4, 0] = NAN
    report = same_everywhere(results(monkeypatch, out, "fp32", "row + column * N",
                                     {"row": row, "column": column}, {"N": 10}))
    assert report["mismatches"] == 2
    assert [m[0] for m in report["first_mismatches"]] == [[3, 6], [4, 0]]


def test_scalar_reference_and_a_three_dimensional_output(monkeypatch):
    out = np.full((3, 4, 5), 2.0, np.float32)
    out[1, 2, 3] = 2.5
    report = same_everywhere(results(monkeypatch, out, "fp32", "2"))
    assert report["first_mismatches"] == [[[1, 2, 3], 2.5, 2.0]]


def test_file_references_in_boxes(monkeypatch, tmp_path):
    values = np.arange(24, dtype=np.float64).reshape(4, 6) / 8
    np.save(tmp_path / "ref.npy", values)                   # plain values
    np.save(tmp_path / "own.npy", values.astype(ml_dtypes.bfloat16))   # the output's type, raw
    out = values.astype(ml_dtypes.bfloat16)
    out[1, 4] = out[3, 5] = 100
    for name in ("ref.npy", "own.npy"):
        spec = Check("out", file=tmp_path / name)
        reports = []
        for size in [25, *SIZES]:
            monkeypatch.setattr(check_module, "CHUNK", size)
            reports.append(json.dumps(run_check(spec, out, T["bf16"], {}, {}).to_json()))
        report = same_everywhere(reports)
        assert [m[0] for m in report["first_mismatches"]] == [[1, 4], [3, 5]]


def test_a_bad_element_of_a_box_is_named_by_its_index_in_the_array():
    from cubinrun.hostdata.values import convert_exactly
    with pytest.raises(ValueError, match=r"element \(2, 3\) = 1e\+300"):
        convert_exactly(np.array([[0.5, 1e300]]), T["fp16"], origin=(2, 2))


def test_expression_errors_in_a_later_block_are_raised(monkeypatch):
    x = np.array([1, 2, 3, -1, 5], np.int64)
    for size in [10, 1, 2]:
        monkeypatch.setattr(check_module, "CHUNK", size)
        with pytest.raises(SpecError, match="cannot evaluate") as info:
            run_check(Check("out", expect=parse_expr("2 ** x", arrays=True)), x.copy(),
                      T["i64"], {"x": x}, {})
        assert info.value.field == "check.out.expect"


def test_inputs_read_again_by_range_give_the_arrays_result(monkeypatch):
    monkeypatch.setattr(check_module, "CHUNK", 100)
    import cubinrun.hostdata.values as hostdata
    monkeypatch.setattr(hostdata, "CHUNK", 100)
    x = input_values(BufferArg("x", T["fp32"], (1000,), Init("random", seed=1)))
    y = input_values(BufferArg("y", T["fp16"], (1000,), Init("random", distribution="normal",
                                                             seed=2)), 1)
    xs, ys = x.whole(), y.whole()
    out = xs + ys.astype(np.float32)
    out[::97] = 0
    spec = Check("out", expect=parse_expr("x + y", arrays=True))
    by_range = run_check(spec, out, T["fp32"], {"x": x, "y": y}, {})
    by_array = run_check(spec, out, T["fp32"], {"x": xs, "y": ys}, {})
    assert by_range.to_json() == by_array.to_json() and by_range.mismatches == 11


@pytest.mark.parametrize("shape, size", [((10,), 3), ((4, 6), 5), ((4, 6), 12), ((2, 3, 4), 5),
                                         ((3, 1000), 7), ((), 4), ((0, 3), 2), ((5,), 100)])
def test_boxes_cover_the_array_in_flat_order(shape, size):
    found = boxes(shape, size)
    flat = np.arange(int(np.prod(shape))).reshape(shape)
    covered = []
    for start, stop, index in found:
        part = flat[index].reshape(-1)
        assert part.tolist() == list(range(start, stop)) and 0 < stop - start <= max(size, 1)
        covered.extend(part.tolist())
    assert covered == list(range(flat.size))


def expected_everywhere(monkeypatch, shape, dtype, expect, inputs, input_types=None,
                        **options):
    """expected_for's blocks joined, the same for one block of everything and for
    each of SIZES; returns (the Expected, its values as one flat array)."""
    from cubinrun.hostdata.check import expected_for
    spec = Check("out", expect=parse_expr(expect, arrays=True), **options)
    joined = []
    for size in [int(np.prod(shape)) + 1, *SIZES]:
        monkeypatch.setattr(check_module, "CHUNK", size)
        expected = expected_for(spec, shape, T[dtype], inputs, {}, input_types)
        joined.append(np.concatenate([b.reshape(-1) for b in expected.blocks()]))
    assert all(j.tobytes() == joined[0].tobytes() and j.dtype == joined[0].dtype
               for j in joined[1:])
    return expected, joined[0]


def test_expected_outputs_for_the_reproducer_in_blocks(monkeypatch):
    x = np.linspace(-3, 3, 50).astype(np.float32)
    expected, values = expected_everywhere(monkeypatch, (50,), "fp32", "x * 2", {"x": x},
                                           rtol=1e-6)
    assert expected.mode == "close" and values.dtype == np.float64
    assert np.array_equal(values, x.astype(np.float64) * 2) and expected.rtol == 1e-6
    # integers: wrapped into the output's type, compared as bits
    i = np.array([2 ** 31 - 1, 7, -2 ** 31] * 7, np.int32)
    expected, values = expected_everywhere(monkeypatch, (21,), "i32", "i + 1", {"i": i})
    assert expected.mode == "bits" and values.dtype == np.int32
    assert np.array_equal(values, i + np.int32(1))
    # exact floats: rounded into the dtype (fp8e4b15 by its own encoding); a scalar reference
    expected, values = expected_everywhere(monkeypatch, (3, 5), "fp16", "1 / 3", {},
                                           exact=True, nan_ok=True)
    assert expected.mode == "bits" and expected.nan_ok
    assert values.tobytes() == np.full(15, 1 / 3, np.float16).tobytes()
    b15 = encode_fp8e4b15(np.linspace(-1.5, 1.5, 40))
    _, values = expected_everywhere(monkeypatch, (40,), "fp8e4b15", "b / 2", {"b": b15},
                                    {"b": T["fp8e4b15"]}, exact=True)
    assert values.tobytes() == encode_fp8e4b15(np.linspace(-1.5, 1.5, 40) / 2).tobytes()


def test_expected_outputs_of_broadcast_inputs(monkeypatch):
    row, column = np.linspace(0, 1, 7), np.arange(5.0).reshape(5, 1)
    _, values = expected_everywhere(monkeypatch, (5, 7), "fp64", "row + column",
                                    {"row": row, "column": column})
    assert np.array_equal(values, (row + column).reshape(-1))
