"""compute-sanitizer: its real output (captured on an H200, tests/fixtures/debug)
parsed from text and XML, finding the tool, and `launch --sanitize` end to end
against a stand-in tool that replays a capture."""
from __future__ import annotations

import gzip
import json
import os
import stat
import sys

import pytest
from support.cli import run as run_cli

from cubinrun.debug import sanitizer, tools
from cubinrun.debug.sanitizer import (ERROR_EXIT, find_sanitizer, group_findings, parse_text,
                                      parse_xml, sanitizer_command)
from cubinrun.errors import CudaError
from support.platforms import skip_on_windows
from support.repo import REPO

FIXTURES = REPO / "tests" / "fixtures" / "debug"
CASES = ["memcheck_oob_read", "racecheck_shared_race", "initcheck_uninit_read",
         "synccheck_sync_divergent", "memcheck_vector_add"]


def fixture(name: str) -> bytes:
    return gzip.decompress((FIXTURES / name).read_bytes())


@pytest.fixture(params=["txt", "xml"])
def parse(request):
    """Each fixture through one of the two parsers."""
    if request.param == "txt":
        return lambda case: parse_text(fixture(f"{case}.txt.gz").decode())
    return lambda case: parse_xml(fixture(f"{case}.xml.gz"))


def test_memcheck_out_of_bounds_reads(parse):
    findings = parse("memcheck_oob_read").findings
    reads = [f for f in findings if f.kind == "Invalid __global__ read"]
    assert len(reads) == 8                      # x[i + 8] for the last 8 threads
    first = reads[0]
    assert (first.thread, first.block, first.size) == ((248, 0, 0), (15, 0, 0), 4)
    assert (first.function, first.source) == ("oob_read", "oob_read.cu:13")
    assert [f.thread[0] for f in reads] == list(range(248, 256))
    addresses = [f.address for f in reads]
    assert [a - addresses[0] for a in addresses] == list(range(0, 32, 4))
    # the aborted kernel then fails cubinrun's own calls, which the tool reports too
    api = [f for f in findings if f.kind == "CUDA API error"]
    assert [f.function for f in api] == ["cuStreamSynchronize", "cuMemFree_v2", "cuMemFree_v2"]


def test_memcheck_text_names_the_nearest_allocation():
    first = parse_text(fixture("memcheck_oob_read.txt.gz").decode()).findings[0]
    assert first.detail == ("out of bounds; is 1 bytes after the nearest allocation at "
                            "0x7f5c2a800000 of size 16384 bytes")
    assert first.address == 0x7F5C2A804000


def test_racecheck_one_race_between_two_lines(parse):
    [race] = parse("racecheck_shared_race").findings
    assert race.kind == "Race condition" and race.source == "shared_race.cu:14"
    assert race.detail == "Write at shared_race.cu:14, Read at shared_race.cu:18, 262144 hazards"
    assert race.thread is None and race.severity == "error"


def test_initcheck_uninitialised_reads(parse):
    findings = parse("initcheck_uninit_read").findings
    assert len(findings) == 100                 # the tool's print limit when captured
    [(first, count)] = group_findings(findings)
    assert count == 100 and first.kind == "Uninitialized __global__ memory read"
    assert (first.source, first.size, first.thread, first.block) == \
        ("uninit_read.cu:20", 4, (96, 0, 0), (0, 0, 0))


def test_synccheck_divergent_barrier(parse):
    [(first, count)] = group_findings(parse("synccheck_sync_divergent").findings)
    assert first.kind == "Barrier error: Divergent thread(s) in warp"
    assert (first.source, first.thread, count) == ("sync_divergent.cu:11", (0, 0, 0), 100)


def test_a_clean_run_has_no_findings(parse):
    assert parse("memcheck_vector_add").findings == []


@pytest.mark.parametrize("case, errors", [("memcheck_oob_read", 11), ("racecheck_shared_race", 1),
                                          ("initcheck_uninit_read", 512),
                                          ("synccheck_sync_divergent", 128),
                                          ("memcheck_vector_add", 0)])
def test_the_summary_counts_findings_not_printed(case, errors):
    assert parse_text(fixture(f"{case}.txt.gz").decode()).errors == errors


@pytest.mark.parametrize("case", CASES)
def test_text_and_xml_agree(case):
    def key(f):
        return (f.kind, f.source, f.thread, f.block, f.size, f.function)
    text = parse_text(fixture(f"{case}.txt.gz").decode()).findings
    xml = parse_xml(fixture(f"{case}.xml.gz")).findings
    assert [key(f) for f in text] == [key(f) for f in xml]


def test_the_command_limits_the_tool_to_one_launch_of_the_kernel():
    command = sanitizer_command("cs", "racecheck", "my_kernel", "f.xml", "log", ["prog", "a"])
    text = " ".join(command)
    assert command[:3] == ["cs", "--tool", "racecheck"] and command[-2:] == ["prog", "a"]
    for part in ("--launch-count 1", f"--error-exitcode {ERROR_EXIT}", "--padding 256",
                 "--kernel-name kns=my_kernel", "--xml --save f.xml", "--log-file log"):
        assert part in text


def test_a_missing_sanitizer_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    monkeypatch.setattr(sanitizer, "_in_wheel", lambda name: None)
    monkeypatch.setattr(tools, "TOOLKIT_BIN", tmp_path / "no-toolkit")
    with pytest.raises(CudaError) as error:
        find_sanitizer()
    message = str(error.value)
    assert error.value.exit_code == 4
    assert message.startswith("compute-sanitizer not found: looked on PATH, $CUDA_HOME/bin, "
                              f"$CUDA_PATH/bin (unset), {tmp_path / 'no-toolkit'} and the "
                              "nvidia-cuda-sanitizer-api wheel (not installed)")


def test_cuda_home_is_searched(monkeypatch, tmp_path):
    tool = tmp_path / "bin" / "compute-sanitizer"
    tool.parent.mkdir()
    tool.write_text("")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert find_sanitizer() == str(tool)


# ------------------------------------------------------- --sanitize end to end

STAND_IN = """#!{python}
# A stand-in compute-sanitizer: replays a capture and runs nothing.
import gzip, json, sys
args = sys.argv[1:]
def value(flag):
    return args[args.index(flag) + 1]
with open({record!r}, "w") as f:
    json.dump(args, f)
open(value("--log-file"), "w").write(gzip.open({text!r}, "rt").read())
open(value("--save"), "wb").write(gzip.open({xml!r}, "rb").read())
sys.stdout.write({stdout!r})
sys.stderr.write({stderr!r})
sys.exit({code})
"""


def stand_in(tmp_path, monkeypatch, case, code, stdout="", stderr=""):
    skip_on_windows("the stand-in tool is a script with a #! line")
    record = tmp_path / "args.json"
    script = tmp_path / "bin" / "compute-sanitizer"
    script.parent.mkdir(exist_ok=True)
    script.write_text(STAND_IN.format(
        python=sys.executable, record=str(record), text=str(FIXTURES / f"{case}.txt.gz"),
        xml=str(FIXTURES / f"{case}.xml.gz"), stdout=stdout, stderr=stderr, code=code))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return record


def test_sanitize_reports_findings_and_exits_1(tmp_path, monkeypatch, capsys):
    record = stand_in(tmp_path, monkeypatch, "memcheck_oob_read", ERROR_EXIT,
                      stderr="error: cuStreamSynchronize failed (after kernel 'oob_read'): "
                             "CUDA_ERROR_LAUNCH_FAILED\n")
    spec = REPO / "configs" / "bugs" / "oob_read.yaml"
    code, out, err = run_cli(capsys, "launch", spec, "--sanitize", "--set", "N=2048")
    assert code == 1
    args = json.loads(record.read_text())
    assert args[args.index("--tool") + 1] == "memcheck"
    assert args[args.index("--kernel-name") + 1] == "kns=oob_read"   # read from the cubin
    program = args[args.index("-m") - 1:]
    assert program[1:] == ["-m", "cubinrun", "launch", str(spec), "--no-bench", "--no-guard",
                           "--json", "--set", "N=2048"]
    assert "memcheck: FAIL, 11 errors" in out
    assert "Invalid __global__ read" in out and "oob_read.cu:13" in out
    assert "cubinrun under the tool: cuStreamSynchronize failed" in out


def test_sanitize_json_carries_the_findings_and_the_run(tmp_path, monkeypatch, capsys):
    child = {"kernel": "shared_race", "check": {"passed": None, "outputs": {}}}
    stand_in(tmp_path, monkeypatch, "racecheck_shared_race", ERROR_EXIT, json.dumps(child))
    code, out, _ = run_cli(capsys, "launch", REPO / "configs" / "bugs" / "shared_race.yaml",
                           "--sanitize", "racecheck", "--json")
    report = json.loads(out)
    assert code == 1 and report["kernel"] == "shared_race"
    found = report["sanitizer"]
    assert found["tool"] == "racecheck" and found["passed"] is False and found["errors"] == 1
    assert found["findings"][0]["source"] == "shared_race.cu:14"


def test_a_clean_run_keeps_cubinrun_s_own_exit_code(tmp_path, monkeypatch, capsys):
    child = {"kernel": "add_kernel",
             "check": {"passed": True, "outputs": {"out": {"passed": True, "mismatches": 0,
                                                           "count": 1024}}}}
    stand_in(tmp_path, monkeypatch, "memcheck_vector_add", 0, json.dumps(child))
    code, out, _ = run_cli(capsys, "launch", REPO / "configs" / "vector_add.yaml", "--sanitize")
    assert code == 0
    assert "memcheck: no errors" in out and "check out: pass (0 / 1024 mismatches)" in out


def test_a_program_error_without_findings_is_passed_through(tmp_path, monkeypatch, capsys):
    stand_in(tmp_path, monkeypatch, "memcheck_vector_add", 4,
             stderr="error: no NVIDIA driver found: cuInit could not load libcuda.so.1\n")
    code, _, err = run_cli(capsys, "launch", REPO / "configs" / "vector_add.yaml", "--sanitize")
    assert code == 4
    assert err.strip() == "error: under memcheck: no NVIDIA driver found: cuInit could not " \
                          "load libcuda.so.1"


def test_no_sanitizer_is_exit_4(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sanitizer, "find_sanitizer", lambda: (_ for _ in ()).throw(
        CudaError("compute-sanitizer not found: looked on PATH")))
    code, out, err = run_cli(capsys, "launch", REPO / "configs" / "vector_add.yaml", "--sanitize")
    assert code == 4 and out == "" and "compute-sanitizer not found" in err
