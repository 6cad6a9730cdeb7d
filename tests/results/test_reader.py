"""Result files as hostile input (issue 24): numbers checked as they are
read, the number of results bounded, JSON lines streamed, duplicates refused,
`compare --strict`, string and mixed points in plots, two files as two series."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.platforms import skip_on_windows

from cubinrun.cli import main
from cubinrun.errors import UsageError
from cubinrun.limits import MAX_RESULT_RECORDS
from cubinrun.results.reader import read_results
from support.repo import REPO

VECTOR_ADD = str(REPO / "configs" / "vector_add.yaml")
BIG = "9" * 400


def run(capsys, *args):
    with pytest.raises(SystemExit) as done:
        main([*map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, out, err


def timed(median=100.0, spec="s.yaml", point=None, samples=None, exit_code=0, device="H200"):
    timing = {"median_us": median, "std_us": 0.01 * median, "samples": 100,
              "p10_us": median, "p90_us": median}
    if samples is not None:
        timing["samples_us"] = samples
    return {"spec": spec, "kernel": "k", "point": point or {}, "exit_code": exit_code,
            "device": {"name": device}, "timing": timing}


def jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines))
    return path


def one_error(capsys, *args) -> str:
    code, _, err = run(capsys, *args)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("field", ['"median_us": 1', '"samples": 1', '"std_us": 1',
                                   '"samples_us": [1, 1, 1, 1, 1, 1]', '"point": {"N": 1}'])
def test_an_integer_of_400_digits_is_one_line_in_every_reader(capsys, tmp_path, field):
    good = timed(point={"N": 1})
    huge = json.dumps(good)[:-1] + ", " + field.replace(": 1", ": " + BIG).replace(
        "[1,", f"[{BIG},").replace('{"N": 1}', '{"N": ' + BIG + "}") + "}"
    if field.startswith('"point"'):
        huge = json.dumps({**good, "point": "X"}).replace('"X"', '{"N": ' + BIG + "}")
    bad = jsonl(tmp_path / "bad.jsonl", [good, huge])
    base = jsonl(tmp_path / "base.jsonl", [good])
    expected = f"bad.jsonl:2: an integer of 400 digits; results hold integers of at most 256 bits"
    assert expected in one_error(capsys, "compare", base, bad)
    if importlib.util.find_spec("matplotlib"):     # the plot extra
        assert expected in one_error(capsys, "plot", bad, "-o", tmp_path / "p.png")
    assert expected in one_error(capsys, "launch", VECTOR_ADD, "--baseline", bad)


def test_a_float_beyond_range_is_not_infinity(capsys, tmp_path):
    base = jsonl(tmp_path / "base.jsonl", [timed(samples=[10.0] * 6)])
    new = jsonl(tmp_path / "new.jsonl", [json.dumps(timed(samples=[10.0] * 6)).replace(
        "[10.0,", "[1e400,")])
    err = one_error(capsys, "compare", base, new)
    assert "new.jsonl:1: the number 1e400 is beyond a float's range" in err


@pytest.mark.parametrize("point, message", [
    ({"N": True}, "`point.N` should be a number or a string"),
    ({"N": [1]}, "`point.N` should be a number or a string"),
    ({"N": None}, "`point.N` should be a number or a string"),
])
def test_point_values_are_numbers_or_strings(tmp_path, point, message):
    path = jsonl(tmp_path / "r.jsonl", [timed(point=point)])
    with pytest.raises(UsageError, match=f"r.jsonl:1: {message}"):
        read_results(path)


def test_a_plot_of_mixed_point_types_is_one_line(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = jsonl(tmp_path / "r.jsonl", [timed(point={"N": 1024}), timed(point={"N": "big"})])
    err = one_error(capsys, "plot", path, "-o", tmp_path / "p.png")
    assert "--x N: the results mix numbers and strings as its values (N=1024 and N='big')" in err


def test_a_string_axis_plots_as_categories(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = jsonl(tmp_path / "r.jsonl", [timed(m, point={"K": k}) for m, k in
                                        ((3.0, "naive"), (1.0, "coalesced"), (2.0, "shared"))])
    target = tmp_path / "p.svg"
    code, _, err = run(capsys, "plot", path, "-o", target)
    text = target.read_text()
    assert code == 0 and all(k in text for k in ("naive", "coalesced", "shared")), err


def test_two_files_plot_as_two_series(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    sweep = lambda scale: [timed(scale * n, point={"N": n}) for n in (1024, 2048, 4096)]
    before = jsonl(tmp_path / "before.jsonl", sweep(1.0))
    after = jsonl(tmp_path / "after.jsonl", sweep(0.5))
    target = tmp_path / "p.svg"
    assert run(capsys, "plot", before, after, "-o", target)[0] == 0
    text = target.read_text()
    assert "before: s" in text and "after: s" in text


def test_the_number_of_results_is_bounded_and_refused_fast(tmp_path):
    """10^6 minimal lines (16 MB, under the size cap): refused at the bound, in
    bounded memory (measured in a child process: its peak resident size)."""
    skip_on_windows("reads the peak memory through resource and /proc (POSIX)")
    if not Path("/proc/self/status").exists():
        pytest.skip("reads the peak memory from /proc (Linux)")
    path = tmp_path / "many.jsonl"
    path.write_bytes(b'{"kernel": "k"}\n' * 1_000_000)
    probe = ("import resource, sys\n"
             "from cubinrun.results.reader import read_results\n"
             "try:\n    read_results(sys.argv[1])\n"
             "except Exception as error:\n    print(error)\n"
             "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
             "status = open('/proc/self/status').read()\n"
             "peak = next(l.split()[1] for l in status.splitlines() if l.startswith('VmHWM'))\n"
             "print(usage.ru_utime + usage.ru_stime, peak)\n")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                          text=True, timeout=600, cwd=REPO)
    lines = done.stdout.splitlines()
    assert len(lines) == 2, (done.stdout[-2000:], done.stderr[-2000:])
    message, (cpu_s, peak_kib) = lines[0], lines[1].split()
    assert f"many.jsonl:{MAX_RESULT_RECORDS + 1}: more than {MAX_RESULT_RECORDS} results" \
        in message, done.stderr
    # CPU time, not wall time: a shared CI machine may stretch the latter
    assert float(cpu_s) < 30, cpu_s         # 120 s and 3.1 GB before the bound
    # VmHWM, the peak of this process's own memory (ru_maxrss counts the
    # parent's image it was forked from: pytest's, hundreds of MB)
    assert int(peak_kib) < 400 << 10, peak_kib      # KiB: the 16 MB file and slim records


def test_results_keep_only_what_their_readers_use(tmp_path):
    full = {**timed(samples=[1.0, 2.0]), "plan": {"big": list(range(1000))},
            "check": {"passed": True, "outputs": {"out": {"max_abs_err": 0.0}}}}
    [kept] = read_results(jsonl(tmp_path / "r.jsonl", [full]))
    assert "plan" not in kept and kept["check"] == {"passed": True,
                                                   "outputs": {"out": {"passed": None}}}
    assert list(kept["timing"]["samples_us"]) == [1.0, 2.0] and kept.place == "line 1"


def test_a_file_holding_a_run_twice_is_refused(capsys, tmp_path):
    base = jsonl(tmp_path / "base.jsonl", [timed(point={"N": 1}), timed(point={"N": 2}),
                                           timed(point={"N": 1.0})])
    new = jsonl(tmp_path / "new.jsonl", [timed(point={"N": 1})])
    err = one_error(capsys, "compare", base, new)
    assert "base.jsonl: the run s.yaml [N=1.0] on H200 is there twice (line 1 and line 3)" in err
    err = one_error(capsys, "compare", new, base)
    assert "base.jsonl: the run s.yaml [N=1.0] on H200 is there twice" in err
    err = one_error(capsys, "launch", VECTOR_ADD, "--baseline", base)
    assert "is there twice (line 1 and line 3)" in err
    document = tmp_path / "doc.json"
    document.write_text(json.dumps({"results": [timed(), timed()]}, indent=2))
    assert "the run s.yaml on H200 is there twice (result 1 and result 2)" in one_error(
        capsys, "compare", document, new)
    other_gpu = jsonl(tmp_path / "two_gpus.jsonl", [timed(), timed(device="A100")])
    assert read_results(other_gpu)          # the same run on two GPU models is two runs


def test_strict_fails_on_runs_missing_or_failed_in_new(capsys, tmp_path):
    base = jsonl(tmp_path / "base.jsonl", [timed(spec=f"{n}.yaml") for n in "abc"])
    new = jsonl(tmp_path / "new.jsonl", [
        timed(spec="a.yaml"),
        {"spec": "b.yaml", "kernel": "k", "point": {}, "exit_code": 1, "status": "check failed",
         "device": {"name": "H200"}}])
    code, out, _ = run(capsys, "compare", base, new)
    assert code == 0 and "MISSING" in out
    code, out, _ = run(capsys, "compare", "--strict", base, new)
    assert code == 5 and "--strict: 2 missing or failed; exit 5" in out
    code, out, _ = run(capsys, "compare", "--strict", "--json", base, new)
    summary = json.loads(out)["summary"]
    assert code == 5 and summary["strict_failures"] == 2 and summary["exit_code"] == 5
    code, _, _ = run(capsys, "compare", "--strict", base, base)
    assert code == 0


def test_an_error_in_a_new_run_not_in_the_baseline_is_a_strict_failure(capsys, tmp_path):
    base = jsonl(tmp_path / "base.jsonl", [timed(spec="a.yaml")])
    new = jsonl(tmp_path / "new.jsonl", [timed(spec="a.yaml"), {
        "spec": "z.yaml", "kernel": None, "point": {}, "exit_code": 3, "status": "build error"}])
    assert run(capsys, "compare", base, new)[0] == 0
    assert run(capsys, "compare", "--strict", base, new)[0] == 5



def test_points_a_sweep_skips_are_not_strict_failures(capsys, tmp_path):
    skipped = {"spec": "a.yaml", "kernel": None, "point": {"N": 2}, "exit_code": 0,
               "status": "skipped", "constraint": "N != 2"}
    base = jsonl(tmp_path / "base.jsonl", [timed(spec="a.yaml", point={"N": 1}), skipped])
    assert run(capsys, "compare", "--strict", base, base)[0] == 0


def test_runs_untimed_on_both_sides_are_not_strict_failures(capsys, tmp_path):
    results = tmp_path / "dry.jsonl"
    assert run(capsys, "launch", "--dry-run", VECTOR_ADD, "--jsonl", results)[0] == 0
    code, out, _ = run(capsys, "compare", "--strict", results, results)
    assert code == 0 and "0 missing or failed" in out
    untimed = {"spec": "a.yaml", "kernel": "k", "point": {}, "exit_code": 0, "status": "ok",
               "device": {"name": "H200"}, "timing": None}          # --no-bench on both sides
    base = jsonl(tmp_path / "base.jsonl", [untimed, timed(spec="b.yaml")])
    new = jsonl(tmp_path / "new.jsonl", [untimed, {**untimed, "spec": "b.yaml"}])
    code, out, _ = run(capsys, "compare", "--strict", base, new)
    assert code == 5 and "1 missing or failed" in out            # b.yaml lost its timing


def test_a_cxx_kernel_matches_across_old_and_new_result_files(capsys, tmp_path):
    old = {**timed(), "kernel": "_Z9transposePfPKfii"}              # before kernel_mangled
    new = {**timed(), "kernel": "transpose(float*, float const*, int, int)",
           "kernel_mangled": "_Z9transposePfPKfii"}
    code, out, _ = run(capsys, "compare", "--json", jsonl(tmp_path / "old.jsonl", [old]),
                       jsonl(tmp_path / "new.jsonl", [new]))
    assert code == 0 and [c["verdict"] for c in json.loads(out)["comparisons"]] == ["SAME"]
    both = jsonl(tmp_path / "both.jsonl", [old, new])
    with pytest.raises(UsageError, match="is there twice"):
        read_results_checked(both)


def read_results_checked(path):
    from cubinrun.results.reader import refuse_duplicates
    refuse_duplicates(read_results(path), path)


def test_long_tables_are_plain_columns_with_every_row(capsys, tmp_path):
    from cubinrun.results.table import RICH_TABLE_ROWS
    runs = RICH_TABLE_ROWS + 200
    base = jsonl(tmp_path / "base.jsonl", [timed(point={"N": n}) for n in range(runs)])
    new = jsonl(tmp_path / "new.jsonl", [timed(200.0 if n == runs - 1 else 100.0, point={"N": n})
                                         for n in range(runs)])
    code, out, _ = run(capsys, "compare", base, new)
    lines = out.splitlines()
    assert code == 5 and len(lines) == runs + 3         # header, rule, rows, summary
    assert lines[0].split() == ["spec", "point", "baseline", "µs", "new", "µs", "ratio", "95%",
                                "interval", "p", "verdict"]
    assert f"N={runs - 1}" in lines[-2] and "SLOWER" in lines[-2]
    assert lines[-1] == f"{runs - 1} SAME, 1 SLOWER; exit 5"


# --- compare streams its files (issue 34) -------------------------------------

def _jsonl(path: Path, results) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in results))
    return path


def test_compare_streams_more_results_than_a_list_holds(capsys, tmp_path, monkeypatch):
    """No cap on a file's results: compare holds each baseline run as its line
    and streams the comparisons (the bound of plot's list is lowered here to
    show compare is not under it)."""
    from cubinrun.results import reader
    monkeypatch.setattr(reader, "MAX_RESULT_RECORDS", 100)
    runs = 10_000
    base = _jsonl(tmp_path / "base.jsonl", (timed(100.0, point={"N": i}) for i in range(runs)))
    new = _jsonl(tmp_path / "new.jsonl",
                 (timed(200.0 if i == 7 else 100.0, point={"N": i}) for i in range(1, runs)))
    code, out, err = run(capsys, "compare", "--json", "--strict", base, new)
    document = json.loads(out)
    assert code == 5 and err == ""
    assert document["summary"] == {"verdicts": {"SAME": runs - 2, "SLOWER": 1, "MISSING": 1},
                                   "exit_code": 5, "strict_failures": 1}
    by_point = {c["point"]["N"]: c["verdict"] for c in document["comparisons"]}
    assert by_point[7] == "SLOWER" and by_point[0] == "MISSING" and len(by_point) == runs
    code, out, _ = run(capsys, "compare", base, new)          # past 1000 rows: plain columns
    lines = out.splitlines()
    assert code == 5 and len(lines) == runs + 3 and lines[1].startswith("-----")
    assert lines[-1] == f"{runs - 2} SAME, 1 SLOWER, 1 MISSING; exit 5"


def test_a_run_twice_late_in_new_is_refused_before_any_output(capsys, tmp_path):
    base = _jsonl(tmp_path / "base.jsonl", (timed(point={"N": i}) for i in range(3000)))
    new = _jsonl(tmp_path / "new.jsonl",
                 [*(timed(point={"N": i}) for i in range(3000)), timed(point={"N": 5})])
    code, out, err = run(capsys, "compare", base, new)
    assert code == 2 and out == ""
    assert err.strip() == (f"error: {new}: the run s.yaml [N=5] on H200 is there twice "
                           "(line 6 and line 3001): keep one command's results per file "
                           "(launch writes its files afresh; --append adds)")


def test_the_baseline_index_refuses_a_run_twice_on_one_device_only(tmp_path):
    """Two devices may each hold a run; the same device twice is refused, also
    behind another device's copy."""
    from cubinrun.results.compare import Baseline
    from cubinrun.results.reader import iter_results
    path = _jsonl(tmp_path / "b.jsonl", [timed(device="A"), timed(device="B"), timed(device="B")])
    with pytest.raises(UsageError, match=r"on B is there twice \(line 2 and line 3\)"):
        Baseline(iter_results(path), source=path)
    path = _jsonl(tmp_path / "ok.jsonl", [timed(device="A"), timed(device="B")])
    index = Baseline(iter_results(path), source=path, ignore_device=True)
    assert index.match(timed(device="A"))["device"] == {"name": "A"}
    assert [c.verdict for c in index.missing()] == ["MISSING"]


def test_runs_whose_keys_share_a_hash_are_told_apart(tmp_path, monkeypatch):
    """DuplicateRuns holds a hash and a line number per run: with every hash
    the same, distinct runs still pass (each collision read again from the
    file) and a run twice is still refused, naming both lines."""
    from cubinrun.results import reader
    from cubinrun.results.reader import DuplicateRuns, iter_results
    monkeypatch.setattr(reader, "hash", lambda key: 0, raising=False)
    path = _jsonl(tmp_path / "r.jsonl", (timed(point={"N": i}) for i in range(50)))
    seen = DuplicateRuns(path)
    for result in iter_results(path):
        seen.add(result)
    assert seen.lines == {0: -1} and len(seen.keys) == 50       # line 1 read again once
    twice = _jsonl(tmp_path / "twice.jsonl",
                   [*(timed(point={"N": i}) for i in range(5)), timed(point={"N": 3})])
    seen = DuplicateRuns(twice)
    with pytest.raises(UsageError, match=r"\[N=3\] on H200 is there twice \(line 4 and line 6\)"):
        for result in iter_results(twice):
            seen.add(result)
