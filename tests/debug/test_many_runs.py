"""The debugging aids in a launch of many runs: guard bands and --repeat in
RunOptions, in this process and in worker processes; a guard, repeat or
sanitizer failure counted as a failed check in the table, CSV and JUnit;
`--sanitize` over several specs and a sweep (each run in turn under a stand-in
tool); `--sanitize` before a spec path; a check table without finite values."""
from __future__ import annotations

import csv
import ctypes
import io
import json
import os
import stat
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.fake_runs import in_process, play_kernel, workers  # noqa: F401  (fixtures)
from support.cli import run as run_cli
from support.specs import passing  # noqa: F401  (fixtures)

from cubinrun.cli.sanitize import optional_tool
from cubinrun.debug.sanitizer import ERROR_EXIT
from cubinrun.results.rows import check_word, failed_checks
from support.platforms import skip_on_windows
from support.repo import REPO

CONFIGS = REPO / "configs"
FIXTURES = REPO / "tests" / "fixtures" / "debug"
N = 4096                                # the `passing` spec's N


def test_a_guard_or_repeat_failure_is_a_failed_check_in_every_format(device, fake_libcuda,
                                                                     in_process, passing,
                                                                     tmp_path, capsys):
    # the "kernel" writes one float past `out` on the first launch of all, and its
    # repeated launches (even numbers) change out[5]: run 1 fails its guard bands and
    # --repeat, run 2 --repeat only; the checks of `out` pass
    def write(out, launch):
        if launch == 1:
            ctypes.memmove(out + 4 * N, struct.pack("<f", 7.0), 4)
        if launch % 2 == 0:
            ctypes.memmove(out + 20, struct.pack("<f", launch / 4), 4)
    play_kernel(device, fake_libcuda, write)
    files = {k: tmp_path / f"out.{k}" for k in ("csv", "xml")}
    code, out, _ = run_cli(capsys, "launch", passing, passing, "--no-bench", "--repeat", "2",
                           "--csv", files["csv"], "--junit", files["xml"])
    assert code == 1 and "2 runs: 2 check failed; exit 1" in out
    rows = list(csv.DictReader(io.StringIO(files["csv"].read_text())))
    assert [(r["check"], r["status"], r["exit_code"]) for r in rows] == \
        [("FAIL", "check failed", "1")] * 2
    failures = ET.parse(files["xml"]).getroot().findall(".//failure")
    assert [f.get("message") for f in failures] == ["failed: guard bands, repeat",
                                                    "failed: repeat"]
    detail = json.loads(failures[0].text)
    assert detail["guards"]["violations"][0]["first_offset"] == 4 * N
    assert detail["check"]["out"]["passed"] is True


def test_failed_checks_name_what_failed():
    clean = {"check": {"passed": True, "outputs": {"out": {"passed": True}}},
             "guards": {"passed": True}}
    assert failed_checks(clean) == [] and check_word(clean) == "pass"
    bad = {"check": {"passed": False, "outputs": {"out": {"passed": False}}},
           "repeat": {"passed": False}, "sanitizer": {"tool": "racecheck", "passed": False}}
    assert failed_checks(bad) == ["check out", "repeat", "racecheck"] and check_word(bad) == "FAIL"
    # nothing but the sanitizer checked, and it found nothing
    assert check_word({"check": {"passed": None}, "sanitizer": {"passed": True}}) == "pass"
    assert check_word({"check": {"passed": None}}) == "-"


def test_guard_and_repeat_reach_worker_processes(workers, passing, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", passing, passing, "--no-bench",
                           "--repeat", "3", "--no-guard")
    results = json.loads(out)["results"]
    assert code == 0 and len(results) == 2
    assert all(r["repeat"]["runs"] == 3 and r["repeat"]["passed"] for r in results)
    assert all("guards" not in r for r in results)
    code, out, _ = run_cli(capsys, "launch", "--json", passing, passing, "--no-bench")
    results = json.loads(out)["results"]
    assert [r["guards"]["buffers"] for r in results] == [3, 3] and "repeat" not in results[0]
    # each worker's run reports its own stages beside the debugging aids
    assert all(set(r["stages_s"]) == {"init", "upload", "launch", "download", "check"}
               for r in results)


# ------------------------------------------------------------- --sanitize, many runs

STAND_IN = """#!{python}
# A stand-in compute-sanitizer: the oob_read spec replays a memcheck capture with
# findings, any other spec a clean one; each call's arguments are appended to a file.
import gzip, json, sys
args = sys.argv[1:]
def value(flag):
    return args[args.index(flag) + 1]
with open({record!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
bad = any(a.endswith("oob_read.yaml") for a in args)
case = "memcheck_oob_read" if bad else "memcheck_vector_add"
open(value("--log-file"), "w").write(gzip.open({fixtures!r} + "/" + case + ".txt.gz", "rt").read())
open(value("--save"), "wb").write(gzip.open({fixtures!r} + "/" + case + ".xml.gz", "rb").read())
child = {{"kernel": "k", "spec": "inner", "exit_code": 0,
          "check": {{"passed": True, "outputs": {{"out": {{"passed": True, "mismatches": 0,
                                                          "count": 8}}}}}}}}
sys.stdout.write(json.dumps(child))
sys.exit({error_exit} if bad else 0)
"""


@pytest.fixture
def sanitizer_calls(tmp_path, monkeypatch):
    """The stand-in tool on PATH; returns a function that reads its calls' arguments."""
    skip_on_windows("the stand-in tool is a script with a #! line")
    record = tmp_path / "calls.jsonl"
    script = tmp_path / "bin" / "compute-sanitizer"
    script.parent.mkdir()
    script.write_text(STAND_IN.format(python=sys.executable, record=str(record),
                                      fixtures=str(FIXTURES), error_exit=ERROR_EXIT))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return lambda: [json.loads(line) for line in record.read_text().splitlines()]


def program(args: list[str]) -> list[str]:
    """The cubinrun command line the tool was given: from `launch` on."""
    return args[args.index("launch"):]


def test_sanitize_runs_every_spec_and_point_in_turn(sanitizer_calls, tmp_path, capsys):
    oob = CONFIGS / "bugs" / "oob_read.yaml"
    junit = tmp_path / "out.xml"
    code, out, err = run_cli(capsys, "launch", "--sanitize", CONFIGS / "vector_add.yaml", oob,
                             "--axis", "N=[1024,2048]", "--junit", junit)
    assert code == 1
    calls = [program(c) for c in sanitizer_calls()]
    assert [(Path(c[1]).name, c[c.index("--set") + 1]) for c in calls] == [
        ("vector_add.yaml", "N=1024"), ("vector_add.yaml", "N=2048"),
        ("oob_read.yaml", "N=1024"), ("oob_read.yaml", "N=2048")]
    assert all(c[2:5] == ["--no-bench", "--no-guard", "--json"] for c in calls)
    assert "4 runs: 2 ok, 2 check failed; exit 1" in out
    messages = [f.get("message") for f in ET.parse(junit).getroot().findall(".//failure")]
    assert messages == ["failed: memcheck"] * 2


def test_sanitize_json_keeps_each_run_s_own_keys(sanitizer_calls, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", "--sanitize", "memcheck",
                           CONFIGS / "vector_add.yaml", CONFIGS / "bugs" / "oob_read.yaml")
    results = json.loads(out)["results"]
    assert code == 1 and [r["exit_code"] for r in results] == [0, 1]
    assert [Path(r["spec"]).name for r in results] == ["vector_add.yaml", "oob_read.yaml"]
    assert [r["sanitizer"]["passed"] for r in results] == [True, False]
    assert results[1]["sanitizer"]["errors"] == 11 and results[1]["status"] == "check failed"
    assert results[0]["check"]["passed"] is True            # cubinrun's own report, under it


def test_sanitize_fail_fast_stops_after_the_first_finding(sanitizer_calls, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", "--sanitize", "--fail-fast",
                           CONFIGS / "bugs" / "oob_read.yaml", CONFIGS / "vector_add.yaml")
    assert code == 1 and len(sanitizer_calls()) == 1
    assert json.loads(out)["summary"]["not_run"] == 1


def test_a_spec_mistake_is_found_before_the_tool_runs(sanitizer_calls, tmp_path, capsys):
    spec = tmp_path / "bad.yaml"
    spec.write_text((CONFIGS / "vector_add.yaml").read_text()
                    .replace("../kernels", str(REPO / "kernels"))
                    .replace("expect: x + y", "expect: x + nosuch"))
    code, out, err = run_cli(capsys, "launch", "--sanitize", spec)
    assert code == 2 and out == "" and "nosuch" in err and str(spec) in err
    assert not (tmp_path / "calls.jsonl").exists()


@pytest.mark.parametrize("words, tool", [
    (["--sanitize", "SPEC"], "memcheck"),               # the spec is not read as the tool
    (["--sanitize", "racecheck", "SPEC"], "racecheck"),
    (["SPEC", "--sanitize", "initcheck"], "initcheck"),
    (["--sanitize=synccheck", "SPEC"], "synccheck"),
    (["SPEC", "--sanitize"], "memcheck"),
])
def test_sanitize_takes_a_tool_only_when_one_is_named(sanitizer_calls, capsys, words, tool):
    spec = str(CONFIGS / "vector_add.yaml")
    code, out, err = run_cli(capsys, "launch", *[spec if w == "SPEC" else w for w in words])
    assert code == 0, err
    [call] = sanitizer_calls()
    assert call[call.index("--tool") + 1] == tool and program(call)[1] == spec
    assert f"{tool}: no errors" in out


def test_optional_tool_rewrites_only_the_sanitize_option():
    assert optional_tool(["--sanitize", "a.yaml", "--set", "N=1"]) == \
        ["--sanitize=memcheck", "a.yaml", "--set", "N=1"]
    assert optional_tool(["--sanitize", "--sanitize", "racecheck"]) == \
        ["--sanitize=memcheck", "--sanitize=racecheck"]
    assert optional_tool(["a.yaml", "--", "--sanitize", "x"]) == ["a.yaml", "--", "--sanitize", "x"]


@pytest.mark.parametrize("extra, message", [
    (["--repeat", "2"], "--sanitize checks the first launch only: no --repeat"),
    (["--dry-run"], "--dry-run launches nothing to sanitize"),
    (["--plot", "p.png"], "--sanitize runs untimed: no --baseline or --plot"),
])
def test_sanitize_refuses_what_it_cannot_do(capsys, extra, message):
    code, out, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--sanitize", *extra)
    assert code == 2 and out == "" and err.strip() == f"error: {message}"


def test_a_check_without_finite_values_reads_n_a(device, fake_libcuda, capsys):
    # on the fake no kernel runs: out_fp64_b keeps its 0 and expects a non-finite
    # value, so no pair of finite values gives an error to show
    code, out, err = run_cli(capsys, "launch", "--no-bench", CONFIGS / "scalars.yaml")
    assert code == 1 and "Traceback" not in err
    [row] = [line for line in out.splitlines() if line.startswith("out_fp64_b")]
    assert [cell.strip() for cell in row.split("│")][1:4] == ["FAIL", "n/a", "n/a"]
