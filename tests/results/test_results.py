"""Saved results: the reader, `compare` on synthetic samples, and plots."""
from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from cubinrun.cli import main
from cubinrun.errors import EXIT_REGRESSION, EXIT_USAGE, UsageError
from cubinrun.results.compare import compare_pair, compare_results, decide, parse_threshold
from cubinrun.results.reader import read_results
from support.platforms import needs_scipy


def run(capsys, *args):
    with pytest.raises(SystemExit) as done:
        main([*map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, out, err


def result(samples, spec="configs/va.yaml", point=None, clock=1980.0, device="NVIDIA H200",
           keep=True, nbytes=None):
    s = np.asarray(samples, dtype=float)
    median = float(np.median(s))
    timing = {"median_us": median, "min_us": float(s.min()), "max_us": float(s.max()),
              "mean_us": float(s.mean()), "std_us": float(s.std(ddof=1)),
              "p10_us": float(np.percentile(s, 10)), "p90_us": float(np.percentile(s, 90)),
              "samples": len(s), "l2": "cold", "sm_clock_mhz": clock}
    if keep:
        timing["samples_us"] = [float(v) for v in s]
    gbps = nbytes / (median * 1e-6) / 1e9 if nbytes else None
    return {"spec": spec, "point": point or {}, "kernel": "add_kernel", "exit_code": 0,
            "device": {"name": device}, "timing": timing,
            "throughput": {"gbps": gbps, "tflops": None, "peak_gbps": 4800.0,
                           "bandwidth_fraction": gbps / 4800 if gbps else None},
            "check": {"passed": True}}


def draw(seed, median=100.0, noise=0.01, n=200):
    # 100 us: a kernel long enough that one process a side can be SAME (process_noise.py)
    rng = np.random.default_rng(seed)
    return median * (1 + noise * rng.standard_normal(n)) + rng.exponential(noise * median, n)


@needs_scipy
def test_a_5_percent_slowdown_with_low_noise_is_slower():
    c = compare_pair(result(draw(1)), result(draw(2, median=105.0)))
    assert c.verdict == "SLOWER" and c.method == "mann-whitney" and c.p_value < 1e-6
    assert c.ratio == pytest.approx(1.05, abs=0.005) and c.low < c.ratio < c.high
    assert compare_pair(result(draw(2, median=105.0)), result(draw(1))).verdict == "FASTER"


@needs_scipy
def test_two_draws_of_one_distribution_are_same_in_95_of_100_seeds():
    verdicts = [compare_pair(result(draw(2 * seed)), result(draw(2 * seed + 1))).verdict
                for seed in range(100)]
    assert verdicts.count("SAME") >= 95, verdicts
    assert "SLOWER" not in verdicts


@needs_scipy
def test_high_noise_is_ambiguous_and_says_so():
    c = compare_pair(result(draw(3, noise=0.3, n=40)), result(draw(4, noise=0.3, n=40)))
    assert c.verdict == "AMBIGUOUS" and "too noisy" in c.reason
    c = compare_pair(result(draw(3, noise=0.3, n=40)), result(draw(4, 105.0, noise=0.3, n=40)))
    assert c.verdict == "AMBIGUOUS"


def test_without_samples_the_median_intervals_decide():
    base, same, slow = (result(draw(5), keep=False), result(draw(6), keep=False),
                        result(draw(7, median=105.0), keep=False))
    assert compare_pair(base, same).verdict == "SAME" and compare_pair(base, same).method == "intervals"
    assert compare_pair(base, slow).verdict == "SLOWER"


@needs_scipy
def test_a_moved_sm_clock_makes_it_ambiguous():
    c = compare_pair(result(draw(1)), result(draw(2, median=105.0), clock=1700.0))
    assert c.verdict == "AMBIGUOUS" and "SM clock moved 1980 -> 1700 MHz" in c.reason
    assert compare_pair(result(draw(1)), result(draw(2), clock=1990.0)).verdict == "SAME"


def test_decide_needs_significance_and_the_threshold():
    assert decide(1.05, 1.04, 1.06, True, 0.03) == "SLOWER"
    assert decide(1.02, 1.01, 1.03, True, 0.03) == "SAME"     # real but below the threshold
    assert decide(1.05, 0.95, 1.15, False, 0.03) == "AMBIGUOUS"
    assert decide(0.9, 0.88, 0.92, True, 0.03) == "FASTER"


def test_threshold_forms():
    assert parse_threshold("3%") == pytest.approx(0.03) and parse_threshold("0.05") == 0.05
    for bad in ("3", "abc", "150%", "-1%"):
        with pytest.raises(UsageError):
            parse_threshold(bad)


@needs_scipy
def test_runs_match_by_spec_kernel_and_point_or_by_file_name():
    base = [result(draw(1), point={"N": 1024}), result(draw(2), point={"N": 2048}),
            result(draw(3), spec="configs/gone.yaml")]
    new = [result(draw(4), spec="/elsewhere/configs/va.yaml", point={"N": 2048.0}),
           result(draw(5), point={"N": 4096})]
    verdicts = [(c.point, c.verdict) for c in compare_results(base, new)]
    assert verdicts == [({"N": 2048.0}, "SAME"), ({"N": 4096}, "NEW"), ({"N": 1024}, "MISSING"),
                        ({}, "MISSING")]


def write(path: Path, results: list[dict], jsonl=False) -> Path:
    if jsonl:
        path.write_text("".join(json.dumps(r) + "\n" for r in results))
    else:
        path.write_text(json.dumps({"results": results, "summary": {}}))
    return path


@needs_scipy
def test_compare_command_exit_5_on_slower_and_json(capsys, tmp_path):
    base = write(tmp_path / "base.json", [result(draw(1), point={"N": 1}),
                                          result(draw(2), point={"N": 2})])
    new = write(tmp_path / "new.jsonl", [result(draw(3), point={"N": 1}),
                                         result(draw(4, median=110.0), point={"N": 2})], jsonl=True)
    code, out, _ = run(capsys, "compare", base, new)
    assert code == EXIT_REGRESSION and "SLOWER" in out and "SAME" in out
    assert out.strip().splitlines()[-1] == "1 SAME, 1 SLOWER; exit 5"
    code, out, _ = run(capsys, "compare", base, new, "--json", "--threshold", "15%")
    document = json.loads(out)
    assert code == 0 and document["threshold"] == pytest.approx(0.15)
    assert [c["verdict"] for c in document["comparisons"]] == ["SAME", "SAME"]   # 10% < 15%


@needs_scipy
def test_compare_refuses_another_gpu_model_unless_told(capsys, tmp_path):
    base = write(tmp_path / "b.json", [result(draw(1))])
    new = write(tmp_path / "n.json", [result(draw(2), device="NVIDIA H100")])
    code, _, err = run(capsys, "compare", base, new)
    assert code == EXIT_USAGE and "NVIDIA H200" in err and "--ignore-device" in err
    code, _, _ = run(capsys, "compare", base, new, "--ignore-device")
    assert code == 0


def test_reader_takes_every_shape_and_names_a_bad_line(tmp_path):
    single = result(draw(1))
    (tmp_path / "one.json").write_text(json.dumps(single))
    assert read_results(tmp_path / "one.json")[0]["timing"]["median_us"] == single["timing"]["median_us"]
    old = {k: v for k, v in single.items() if k not in ("spec", "point", "exit_code")}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert read_results(tmp_path / "old.json")[0]["spec"] is None
    (tmp_path / "bad.jsonl").write_text(json.dumps(single) + "\n{nope\n")
    with pytest.raises(UsageError, match="bad.jsonl:2: not JSON"):
        read_results(tmp_path / "bad.jsonl")
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(UsageError, match="other.json:1: not a cubinrun result"):
        read_results(tmp_path / "other.json")


def sweep_results() -> list[dict]:
    out = []
    for block in (128, 256):
        for e in range(16, 29, 2):
            n = 2 ** e
            median = 2 + n * 12 / 4.0e12 * 1e6 * (1 if block == 128 else 1.1)
            r = result(draw(e, median=median, n=50), point={"N": n, "BLOCK": block},
                       nbytes=12 * n, keep=False)
            r["pow2"] = ["N"]
            out.append(r)
    return out


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_of_a_saved_sweep(capsys, tmp_path, suffix):
    pytest.importorskip("matplotlib")
    saved = write(tmp_path / "sweep.jsonl", sweep_results(), jsonl=True)
    target = tmp_path / f"sweep{suffix}"
    code, _, err = run(capsys, "plot", saved, "-o", target)
    assert code == 0 and f"wrote {target}" in err
    data = target.read_bytes()
    assert 10_000 < len(data) < 2_000_000
    if suffix == ".png":
        width, height = png_size(data)
        assert 1000 <= width <= 2000 and 400 <= height <= 1000
    else:
        root = ET.fromstring(data)
        assert root.tag.endswith("svg")
        text = data.decode()
        assert "median time" in text and "peak" in text and "BLOCK=256" in text


def test_plot_errors_are_one_line(capsys, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")       # the plot extra (the Wine stage has none)
    saved = write(tmp_path / "flat.json", [result(draw(1)), result(draw(2), spec="b.yaml")])
    code, _, err = run(capsys, "plot", saved, "-o", tmp_path / "p.png")
    assert code == EXIT_USAGE and "no sweep" in err and err.count("\n") == 1
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code, _, err = run(capsys, "plot", saved, "-o", tmp_path / "p.png")
    assert code == EXIT_USAGE and "pip install 'cubinrun[plot]'" in err


def test_jsonl_is_afresh_and_appends_only_when_asked(tmp_path):
    from cubinrun.results.writers import JsonLines
    path = tmp_path / "all.jsonl"
    for first in (1, 2):                    # two commands writing one file
        lines = JsonLines(str(path))
        lines.write(result(draw(first), point={"N": first}))
        lines.close()
    assert [r["point"] for r in read_results(path)] == [{"N": 2}]
    lines = JsonLines(str(path), append=True)   # --append: collecting one file
    lines.write(result(draw(3), point={"N": 3}))
    lines.close()
    assert [r["point"] for r in read_results(path)] == [{"N": 2}, {"N": 3}]
