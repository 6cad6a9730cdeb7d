"""A sweep's space: constraints, skipped points, string axes, `sweep_invalid`
(SPEC section 5), through specfile/sweep.py and the launch command (no GPU)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cubinrun.cli import main
from cubinrun.errors import SpecError, UsageError
from cubinrun.runs.expand import expand
from cubinrun.runs.outcome import RunRecord
from cubinrun.specfile.sweep import sweep_space
from support.repo import REPO

CUBIN = REPO / "kernels/build/vector_add.sm_90.cubin"

SPEC = """\
kernel:
  cubin: {cubin}
  name: add_kernel
signature: {{x: "*fp32", y: "*fp32", out: "*fp32", n: i32}}
vars: {{N: 1024, BX: 32, BY: 4, TY: 8, TILE: BY * TY}}
args:
  x: {{shape: [N]}}
  y: {{shape: [N]}}
  out: {{shape: [N]}}
  n: N
grid: [cdiv(N, BX)]
sweep:
  BX: [16, 32, 64]
  BY: [2, 4]
  TY: [4, 8]
constraints:
  - BX == TILE
  - BX * BY <= 128
"""


def write(tmp_path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text.format(cubin=CUBIN))
    return path


def test_constraints_mark_points_skipped_with_the_first_failing_constraint(tmp_path):
    space = sweep_space(write(tmp_path, SPEC))
    assert space.size == 12 and not space.invalid_skip
    points = list(space.points())
    runnable = [p.values for p in points if p.runnable]
    # BX == BY * TY (a derived var) and BX * BY <= 128
    assert runnable == [{"BX": 16, "BY": 2, "TY": 8}, {"BX": 16, "BY": 4, "TY": 4},
                        {"BX": 32, "BY": 4, "TY": 8}]
    first = points[0]                       # 16 != 2 * 4
    assert first.failed.text == "BX == TILE" and first.failed.where == "constraints[0]"
    assert first.failed.line == 17
    big = next(p for p in points if p.values == {"BX": 64, "BY": 4, "TY": 8})
    assert big.failed is not None and big.failed.text == "BX == TILE"
    assert space.check({"BX": 64, "BY": 4, "TY": 16}).text == "BX * BY <= 128"


def test_cli_constraints_add_and_set_pins(tmp_path):
    path = write(tmp_path, SPEC)
    tasks = expand([str(path)], {}, (), ["BY == 2"])
    assert [t.point for t in tasks if t.runnable] == [{"BX": 16, "BY": 2, "TY": 8}]
    skipped = [t for t in tasks if t.skipped]
    assert len(skipped) == 11 and {t.skipped for t in skipped} == {"BX == TILE", "BY == 2"}
    tasks = expand([str(path)], {"TY": "4"})
    assert [t.point for t in tasks if t.runnable] == [{"BX": 16, "BY": 4}]
    with pytest.raises(UsageError, match="--constraint 'BX <': invalid expression"):
        expand([str(path)], {}, (), ["BX <"])


@pytest.mark.parametrize("change, fragment", [
    ("  - BX * BY <= 128\n", "  - BQ <= 1\n", ),
    ("  - BX * BY <= 128\n", "  - BX * BY\n"),
    ("  - BX * BY <= 128\n", "  - [1]\n"),
    ("sweep:", "sweep_invalid: maybe\nsweep:"),
])
def test_constraint_errors_name_the_line(tmp_path, change, fragment):
    path = write(tmp_path, SPEC.replace(change, fragment))
    tasks = expand([str(path)], {})
    assert len(tasks) == 1 and isinstance(tasks[0].error, SpecError)
    message = str(tasks[0].error)
    assert message.startswith(str(path)) and ":" in message
    expected = {"BQ": "constraints[1]: unknown name 'BQ' (a constraint reads vars: N, BX, BY",
                "BX * BY\n": "constraints[1]: must be a comparison",
                "[1]": "constraints[1]: must be an expression",
                "maybe": "sweep_invalid: must be error or skip, got 'maybe'"}
    key = next(k for k in expected if k in fragment)
    assert expected[key] in message
    line = next(i for i, l in enumerate(path.read_text().splitlines(), 1)
                if fragment.strip().splitlines()[0] in l)
    assert f"{path}:{line}:" in message


def test_cli_constraint_on_an_unknown_var_fails_that_spec(tmp_path):
    tasks = expand([str(write(tmp_path, SPEC))], {}, (), ["Q > 1"])
    assert "--constraint 'Q > 1': unknown name 'Q'" in str(tasks[0].error)


def test_a_constraint_that_cannot_be_evaluated_is_a_spec_error(tmp_path):
    path = write(tmp_path, SPEC.replace("BX * BY <= 128", "128 / (BY - 2) > 1"))
    tasks = expand([str(path)], {}, (), [])
    assert "constraints[1]: division by zero" in str(tasks[0].error)


STRINGS = """\
kernel:
  source: kern.cu
  name: "{{K}}"
  options: ["-DT={{T}}"]
  arch: sm_90
signature: {{x: "*{{T}}", n: i32}}
vars: {{K: "'copy'", T: "'fp32'", N: 256}}
args:
  x: {{shape: [N]}}
  n: N
grid: [1]
block: [N]
sweep:
  K: [copy, scale]
  T: [fp32, fp64]
constraints:
  - K == 'copy' or T == 'fp32'
"""


def test_string_axes_reach_names_options_and_the_signature(tmp_path):
    path = write(tmp_path, STRINGS)
    tasks = expand([str(path)], {})
    assert [t.point for t in tasks] == [{"K": "copy", "T": "fp32"}, {"K": "copy", "T": "fp64"},
                                        {"K": "scale", "T": "fp32"}, {"K": "scale", "T": "fp64"}]
    assert tasks[3].skipped == "K == 'copy' or T == 'fp32'" and tasks[1].runnable
    assert tasks[1].overrides == {"K": "'copy'", "T": "'fp64'"}
    from cubinrun.specfile import load_spec
    (tmp_path / "kern.cu").write_text("// placeholder: loading reads no source\n")
    spec = load_spec(path, tasks[1].overrides)
    assert spec.kernel.options == ("-DT=fp64",)
    assert spec.signature.params[0][1].pointee.name == "fp64"
    assert spec.vars["K"] == "copy"


def test_cli_string_axis_and_a_mixed_axis(tmp_path):
    path = write(tmp_path, STRINGS)
    tasks = expand([str(path)], {}, ["K=[copy,scale,shift]"])
    assert len(tasks) == 6 and tasks[4].point == {"K": "shift", "T": "fp32"}
    with pytest.raises(UsageError, match="numbers or strings, not both"):
        expand([str(path)], {}, ["K=[copy,1]"])


def test_skipped_records_exit_zero_and_carry_the_constraint(tmp_path):
    task = next(t for t in expand([str(write(tmp_path, SPEC))], {}) if t.skipped)
    record = RunRecord.not_run(task)
    document = record.to_json()
    assert record.exit_code == 0 and document["status"] == "skipped"
    assert document["constraint"] == "BX == TILE" and document["error"] is None


def run(args) -> int:
    with pytest.raises(SystemExit) as done:
        main(args)
    return done.value.code


def test_dry_run_lists_skipped_points_and_exits_0(tmp_path, capsys):
    path = write(tmp_path, SPEC)
    code = run(["launch", "--dry-run", str(path), "--json"])
    assert code == 0
    results = json.loads(capsys.readouterr().out)["results"]
    statuses = [r["status"] for r in results]
    assert statuses.count("dry-run") == 3 and statuses.count("skipped") == 9
    assert {r["constraint"] for r in results if r["status"] == "skipped"} == {"BX == TILE"}
    code = run(["launch", "--dry-run", str(path), "--constraint", "BX == 16"])
    out = capsys.readouterr().out
    assert code == 0 and "skipped: BX == 16" in out and "10 skipped by constraints" in out


@pytest.mark.parametrize("skip, code", [(False, 3), (True, 0)])
def test_a_resource_limit_in_a_sweep_is_an_invalid_point(tmp_path, skip, code):
    from cubinrun.errors import BuildError, ResourceLimitError, invalid_reason
    text = SPEC + ("sweep_invalid: skip\n" if skip else "")
    task = next(t for t in expand([str(write(tmp_path, text))], {}) if t.runnable)
    error = ResourceLimitError("kernel.source: ptxas: too much shared data",
                               "uses 0x20000 bytes of static shared memory (at most 0xc000)")
    assert invalid_reason(error).startswith("uses 0x20000") and invalid_reason(BuildError("x")) is None
    record = RunRecord.failed(task, error)
    document = record.to_json()
    assert record.exit_code == code and document["status"] == "invalid"
    assert document["error"] == {"type": "invalid", "message": error.reason}
    assert record.error_line().startswith("invalid: ")
    single = RunRecord.failed(expand([str(write(tmp_path, SPEC.split("sweep:")[0], "one.yaml"))],
                                     {})[0], error)
    assert single.exit_code == 3 and single.status == "build error"     # not in a sweep


def test_a_dry_run_sweep_parses_its_spec_and_reads_its_binary_once(tmp_path, monkeypatch,
                                                                   capsys):
    # per point work was YAML parsing and cubin facts: 56 s for 10,000 points
    from cubinrun.specfile import yamlload
    from cubinrun.binary import load
    calls = {"yaml": 0, "cubin": 0}
    parse, read = yamlload.load_yaml_text, load.read_cubin_cached

    def counted(name, function):
        def call(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return call
    monkeypatch.setattr(yamlload, "load_yaml_text", counted("yaml", parse))
    monkeypatch.setattr(load, "read_cubin_cached", counted("cubin", read))
    path = write(tmp_path, SPEC.replace("sweep:", "sweep:\n  N: range(1024, 1123)"))   # inclusive: 100 values
    assert run(["launch", "--dry-run", str(path)]) == 0
    assert "1200 runs planned, 300 ok, 900 skipped by constraints; exit 0" in capsys.readouterr().out
    assert calls == {"yaml": 1, "cubin": 1}


def test_a_string_given_with_set_unquoted_gets_the_fix(tmp_path, capsys):
    (tmp_path / "kern.cu").write_text("// not compiled: the spec fails first\n")
    path = write(tmp_path, STRINGS.split("sweep:")[0])
    assert run(["launch", "--dry-run", str(path), "--set", "K=scale"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "--set K: unknown name 'scale' (known: K, N, T, arch, l2_bytes, max_shared_optin, "
        "sm_count, warp_size); a string is quoted: \"'scale'\"")


def test_constraints_nested_under_sweep_are_told_they_are_a_top_level_key(tmp_path, capsys):
    nested = SPEC.replace("constraints:\n  - BX == TILE\n  - BX * BY <= 128\n",
                          "  constraints:\n    - BX == TILE\n")
    path = write(tmp_path, nested)
    assert run(["launch", "--dry-run", str(path)]) == 2
    line = nested.splitlines().index("  constraints:") + 1
    assert capsys.readouterr().err.strip() == (
        f"error: {path}:{line}: sweep.constraints: `constraints:` is a top-level key, not an "
        f"axis: write it beside `sweep:`, not inside it")


def test_a_sweep_whose_every_point_is_skipped_fails_naming_the_pinned_set(tmp_path, capsys):
    # BY=8 and TY=4 make TILE (BY * TY) 32: BX 16 and 64 fail BX == TILE, 32 fails BX * BY <= 128
    path = write(tmp_path, SPEC)
    junit = tmp_path / "r.xml"
    code = run(["launch", "--dry-run", str(path), "--set", "BY=8", "--set", "TY=4",
                "--junit", str(junit)])
    captured = capsys.readouterr()
    assert code == 2
    line = SPEC.splitlines().index("constraints:") + 1
    assert captured.err.strip() == (
        f"error: {path}:{line}: constraints: nothing runs: every point of the sweep fails a "
        f"constraint (BX == TILE (--set BY=8, TY=4): 2 points; BX * BY <= 128 (--set BY=8): "
        f"1 point)")
    assert "skipped: BX == TILE (--set BY=8, TY=4)" in captured.out     # the table shows the pins
    assert "skipped: BX * BY <= 128 (--set BY=8)" in captured.out
    assert "3 runs planned, 0 ok, 3 skipped by constraints; exit 2" in captured.out
    assert 'errors="1"' in junit.read_text()        # a CI report fails too


def test_a_launch_that_runs_nothing_fails_too_and_its_records_keep_the_reason(tmp_path, capsys):
    path = write(tmp_path, SPEC)
    tasks = expand([str(path)], {"BY": "8", "TY": "4", "BX": "32"})
    assert len(tasks) == 1 and not tasks[0].runnable
    record = RunRecord.not_run(tasks[0])
    document = record.to_json()
    assert record.exit_code == 2 and document["status"] == "skipped"
    assert document["constraint"] == "BX * BY <= 128 (--set BX=32, BY=8)"
    assert record.error_line() == (f"error: {path}:{SPEC.splitlines().index('  - BX * BY <= 128') + 1}:"
                                   f" constraints[1]: nothing runs: every point of the sweep fails "
                                   f"a constraint (BX * BY <= 128 (--set BX=32, BY=8): 1 point)")
    # no GPU is needed to run nothing: the launch's table and exit code say it
    assert run(["launch", str(path), "--set", "BY=8", "--set", "TY=4"]) == 2
    captured = capsys.readouterr()
    assert "skipped: BX * BY <= 128 (--set BY=8)" in captured.out
    assert "3 runs: 3 skipped; exit 2" in captured.out
    assert captured.err.count("nothing runs") == 1


def test_a_cli_constraint_that_skips_every_point_names_the_flag(tmp_path, capsys):
    path = write(tmp_path, SPEC.split("constraints:")[0], "free.yaml")
    assert run(["launch", "--dry-run", str(path), "--constraint", "N < 10"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {path}: --constraint 'N < 10': nothing runs: every point of the sweep fails "
        f"a constraint (N < 10: 12 points)")
    # with the spec's constraints failed too, the spec's `constraints:` is named
    path = write(tmp_path, SPEC)
    assert run(["launch", "--dry-run", str(path), "--constraint", "N < 10"]) == 2
    line = SPEC.splitlines().index("constraints:") + 1
    assert capsys.readouterr().err.strip() == (
        f"error: {path}:{line}: constraints: nothing runs: every point of the sweep fails a "
        f"constraint (BX == TILE: 9 points; N < 10: 3 points)")


def test_the_error_of_a_sweep_that_runs_nothing_stays_one_line(tmp_path, capsys):
    # a constraint may span lines in YAML (a parenthesised expression): the error may not
    spec = SPEC.replace("  - BX * BY <= 128\n", '  - "(BX * BY\\n <= 1)"\n')
    path = write(tmp_path, spec)
    assert run(["launch", "--dry-run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "(BX * BY\\n <= 1): 3 points" in err
