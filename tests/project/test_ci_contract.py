"""The CI contract of result files (SPEC section 3): each command writes them
afresh (--append keeps a JSONL file's lines), $GITHUB_STEP_SUMMARY is added
to as GitHub expects, and a dry run writes the same files, so a job without
a GPU still publishes a report."""
from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cubinrun.cli import main
from support.repo import REPO

VECTOR_ADD = str(REPO / "configs" / "vector_add.yaml")
SCALARS = str(REPO / "configs" / "scalars.yaml")


def run(capsys, *args):
    with pytest.raises(SystemExit) as done:
        main([*map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, out, err


@pytest.fixture
def bad_spec(tmp_path) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text("kernel: {cubin: nothing.cubin}\n")
    return str(path)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_jsonl_is_written_afresh_unless_append(capsys, tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text('{"kernel": "from an earlier job"}\n')
    assert run(capsys, "launch", "--dry-run", VECTOR_ADD, "--jsonl", out)[0] == 0
    assert [r["kernel"] for r in lines(out)] == ["add_kernel"]
    assert run(capsys, "launch", "--dry-run", SCALARS, "--jsonl", out, "--append")[0] == 0
    assert [r["kernel"] for r in lines(out)] == ["add_kernel", "scalars_roundtrip"]


def test_every_other_result_file_is_written_afresh(capsys, tmp_path):
    paths = {flag: tmp_path / f"r.{flag}" for flag in ("csv", "markdown", "junit")}
    for path in paths.values():
        path.write_text("stale content of an earlier job\n")
    args = [a for flag, path in paths.items() for a in (f"--{flag}", path)]
    assert run(capsys, "launch", "--dry-run", VECTOR_ADD, *args)[0] == 0
    for path in paths.values():
        assert "stale" not in path.read_text()


def test_append_needs_a_jsonl_file(capsys):
    for extra in ((), ("--jsonl", "-")):
        code, _, err = run(capsys, "launch", "--dry-run", VECTOR_ADD, "--append", *extra)
        assert code == 2 and err == "error: --append adds to a --jsonl file: give --jsonl PATH\n"


def test_the_github_step_summary_is_appended_to(capsys, tmp_path, monkeypatch):
    summary = tmp_path / "step_summary"
    summary.write_text("## my own summary\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert run(capsys, "launch", "--dry-run", VECTOR_ADD, "--markdown", summary)[0] == 0
    text = summary.read_text()
    assert text.startswith("## my own summary\n\n### cubinrun: 1 run: 1 dry-run; exit 0")
    other = tmp_path / "other.md"               # any other file: afresh
    other.write_text("old\n")
    assert run(capsys, "launch", "--dry-run", VECTOR_ADD, "--markdown", other)[0] == 0
    assert other.read_text().startswith("### cubinrun:")


def test_a_dry_run_writes_every_result_file(capsys, tmp_path, bad_spec):
    jsonl, junit, csv_path, md = (tmp_path / n for n in ("r.jsonl", "j.xml", "r.csv", "r.md"))
    code, out, err = run(capsys, "launch", "--dry-run", VECTOR_ADD, bad_spec, SCALARS,
                         "--jsonl", jsonl, "--junit", junit, "--csv", csv_path,
                         "--markdown", md)
    assert code == 2 and err.count("\n") == 1 and "bad.yaml:1: kernel.cubin" in err
    results = lines(jsonl)
    assert [r["status"] for r in results] == ["dry-run", "spec error", "dry-run"]
    assert [r["exit_code"] for r in results] == [0, 2, 0]
    assert all("timing" not in r for r in results) and results[0]["kernel"] == "add_kernel"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "0", "1")
    cases = suite.findall("testcase")
    assert [c.find("error") is None and c.find("failure") is None for c in cases] == [
        True, False, True]
    assert cases[0].get("classname").endswith("configs.vector_add")
    assert not cases[0].get("classname").startswith("/")
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["status"] for r in rows] == ["dry-run", "spec error", "dry-run"]
    assert rows[0]["median_us"] == ""
    assert "3 runs: 2 dry-run, 1 spec error; exit 2" in md.read_text()
    assert "3 runs planned, 2 ok; exit 2" in out


def test_one_dry_run_keeps_its_plan_and_writes_files(capsys, tmp_path, bad_spec):
    junit = tmp_path / "j.xml"
    code, out, _ = run(capsys, "launch", "--dry-run", "--json", VECTOR_ADD, "--junit", junit)
    assert code == 0 and json.loads(out)["grid"] == [1024, 1, 1]     # section 2 unchanged
    assert ET.parse(junit).getroot().get("tests") == "1"
    code, out, err = run(capsys, "launch", "--dry-run", bad_spec, "--junit", junit)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert ET.parse(junit).getroot().find("testsuite/testcase/error") is not None


def test_a_dry_runs_jsonl_holds_the_plan_whatever_stdout_shows(capsys, tmp_path):
    jsonl = tmp_path / "r.jsonl"
    for specs in ((VECTOR_ADD,), (VECTOR_ADD, SCALARS)):
        for shown in ((), ("--json",)):
            assert run(capsys, "launch", "--dry-run", *specs, *shown, "--jsonl", jsonl)[0] == 0
            assert [r["grid"][0] for r in lines(jsonl)] == [1024, 1][:len(specs)], shown


def test_a_dry_run_to_jsonl_on_stdout(capsys):
    code, out, _ = run(capsys, "launch", "--dry-run", VECTOR_ADD, SCALARS, "--jsonl", "-")
    assert code == 0 and [json.loads(l)["status"] for l in out.splitlines()] == ["dry-run"] * 2


def test_fail_fast_stops_a_dry_run(capsys, tmp_path, bad_spec):
    jsonl = tmp_path / "r.jsonl"
    code, out, _ = run(capsys, "launch", "--dry-run", "--json", "--fail-fast", VECTOR_ADD,
                       bad_spec, SCALARS, "--jsonl", jsonl)
    document = json.loads(out)
    assert code == 2 and len(document["results"]) == 2 and len(lines(jsonl)) == 2
    assert document["summary"]["not_run"] == 1 and document["summary"]["exit_code"] == 2


def test_the_ci_jobs_command_line_takes_dry_run_as_it_is(capsys, tmp_path):
    # the documented job's flags; the baseline does not exist yet (a first job)
    junit = tmp_path / "junit.xml"
    code, _, err = run(capsys, "launch", "--dry-run", VECTOR_ADD, "--samples", "--junit", junit,
                       "--baseline", tmp_path / "baseline.jsonl", "--threshold", "3%",
                       "--plot", tmp_path / "sweep.png")
    assert code == 0 and err == "note: --dry-run times nothing: --plot and --baseline left out\n"
    assert junit.exists() and not (tmp_path / "sweep.png").exists()


def test_the_docs_agree_on_exit_codes_and_props(capsys):
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for page in docs:
        text = page.read_text()
        assert "(0-4)" not in text and "0-4 " not in text, page      # 5 is a regression
        assert "appended and flushed" not in text, page              # JSONL is afresh
    code, out, _ = run(capsys, "props", "--help")
    assert code == 0 and "(default: every device)" in out
