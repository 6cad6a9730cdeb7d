"""Sweep axes and the expansion of a command line into runs (no GPU)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cubinrun.cli import main
from cubinrun.errors import UsageError
from cubinrun.specfile.axes import AxisError, cli_axis, points, spec_axis
from cubinrun.runs.expand import expand
from support.repo import REPO

CONFIGS = REPO / "configs"


@pytest.mark.parametrize("text, values, pow2", [
    ("N[pow2]=[16:28:2]", [2**e for e in range(16, 29, 2)], True),
    ("N=[2:8:2]", [2, 4, 6, 8], False),
    ("N=[1:3]", [1, 2, 3], False),
    ("N=[1,2,3]", [1, 2, 3], False),
    ("N = [ 1024 , 4096 ]", [1024, 4096], False),
    ("N=5", [5], False),
    ("N[pow2]=10", [1024], True),
    ("N[pow2]=[4,6]", [16, 64], True),
    ("X=[0:1:0.25]", [0, 0.25, 0.5, 0.75, 1], False),
    ("X=[1e3,0x10]", [1000, 16], False),
])
def test_nvbench_axis_grammar(text, values, pow2):
    axis = cli_axis(text)
    assert list(axis.values) == values and axis.pow2 == pow2 and axis.name in ("N", "X")


@pytest.mark.parametrize("text, fragment", [
    ("N", "not NAME=VALUES"),
    ("N=[1:", "unbalanced brackets"),
    ("N=[]", "no values"),
    ("N=[1:2:0]", "stride must be positive"),
    ("N=[8:2]", "is empty"),
    ("N=[a,1]", "'a' is not a number"),
    ("N=[0:1e308:1e-308]", "exceed the limit"),
    ("N=[0:" + "9" * 400 + "]", "at most 100"),
    ("N=[0:1e999]", "out of range"),
    ("N=[1e999]", "out of range"),
    ("N=[a{b}]", "no braces"),
    ("N=[1,1]", "appears twice"),
    ("N[pow2]=[64]", "pow2 exponent"),
    ("N[pow2]=[1.5]", "pow2 exponent"),
    ("N=[0:100000000]", "exceed the limit"),
    ("2N=1", "not NAME=VALUES"),
    ("N[log]=[1]", "not NAME=VALUES"),
])
def test_bad_axes_are_usage_errors_quoting_the_token(text, fragment):
    with pytest.raises(UsageError) as error:
        cli_axis(text)
    message = str(error.value)
    assert message.startswith(f"--axis {text[:40]!r}"[:-1]) and fragment in message
    assert "\n" not in message and len(message) < 400         # one line, the token cut


def test_spec_sweep_forms():
    assert spec_axis("N", "pow2(16, 28, 2)").values == tuple(2**e for e in range(16, 29, 2))
    assert spec_axis("W", "range(2, 8, 2)").values == (2, 4, 6, 8)
    assert spec_axis("W", "range(1, 3)").values == (1, 2, 3)
    assert spec_axis("B", [128, 256, "512"]).values == (128, 256, 512)
    assert spec_axis("B", 7).values == (7,)
    for bad in ("pow2(1)", "squares(1, 2)", {"a": 1}, [], "range(4, 2)", "range(0, 1e308, 1e-308)",
                [1, "x"], [True]):
        with pytest.raises(AxisError):
            spec_axis("N", bad)


def test_points_are_the_product_with_the_first_axis_outermost():
    grid = points([cli_axis("A=[1,2]"), cli_axis("B=[3,4,5]")])
    assert grid[:4] == [{"A": 1, "B": 3}, {"A": 1, "B": 4}, {"A": 1, "B": 5}, {"A": 2, "B": 3}]
    assert points([]) == [{}]
    with pytest.raises(AxisError, match="points .A 1000 x B 1000. exceed"):
        points([cli_axis("A=[1:1000]"), cli_axis("B=[1:1000]")])


SWEPT = """\
kernel:
  cubin: {cubin}
  name: add_kernel
signature: {{x: "*fp32", y: "*fp32", out: "*fp32", n: i32}}
vars: {{N: 1024, BLOCK: 128}}
args:
  x: {{shape: [N]}}
  y: {{shape: [N]}}
  out: {{shape: [N]}}
  n: N
grid: [cdiv(N, BLOCK)]
sweep:
  N: pow2(10, 12)
  BLOCK: [128, 256]
"""


@pytest.fixture
def swept(tmp_path) -> Path:
    path = tmp_path / "swept.yaml"
    path.write_text(SWEPT.format(cubin=REPO / "kernels/build/vector_add.sm_90.cubin"))
    return path


def test_a_spec_sweep_expands_and_axes_replace_add_or_are_pinned_by_set(swept):
    tasks = expand([str(swept)], {})
    assert [t.point for t in tasks][:3] == [{"N": 1024, "BLOCK": 128}, {"N": 1024, "BLOCK": 256},
                                            {"N": 2048, "BLOCK": 128}]
    assert len(tasks) == 6 and tasks[0].pow2 == ("N",) and tasks[5].overrides == {
        "N": "4096", "BLOCK": "256"}
    tasks = expand([str(swept)], {}, ["N=[100,200,300]"])
    assert len(tasks) == 6 and {t.point["N"] for t in tasks} == {100, 200, 300}
    tasks = expand([str(swept)], {"BLOCK": "64"})
    assert [t.point for t in tasks] == [{"N": 1024}, {"N": 2048}, {"N": 4096}]
    assert all(t.overrides["BLOCK"] == "64" for t in tasks)
    with pytest.raises(UsageError, match="both swept"):
        expand([str(swept)], {"N": "1"}, ["N=[1,2]"])


def test_a_bad_sweep_fails_its_spec_only(swept, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(swept.read_text().replace("BLOCK: [128, 256]", "WARPS: [1, 2]"))
    tasks = expand([str(bad), str(swept)], {})
    assert tasks[0].error is not None and "sweep.WARPS" in str(tasks[0].error)
    assert "an axis must name a var" in str(tasks[0].error) and ":14:" in str(tasks[0].error)
    assert len(tasks) == 7 and all(t.error is None for t in tasks[1:])


def test_folders_are_their_sorted_yaml_and_missing_paths_stop_everything(tmp_path):
    tasks = expand([str(CONFIGS)], {})
    names = [Path(t.spec).name for t in tasks]
    assert names == sorted(p.name for p in CONFIGS.glob("*.yaml"))
    with pytest.raises(UsageError, match="no such file"):
        expand([str(CONFIGS / "vector_add.yaml"), "nowhere.yaml"], {})
    with pytest.raises(UsageError, match="no \\*.yaml"):
        expand([str(tmp_path)], {})


def test_dry_run_of_a_sweep_plans_every_point_and_the_scalar_arg_follows(swept, capsys):
    with pytest.raises(SystemExit) as done:
        main(["launch", "--dry-run", "--json", str(swept), "--axis", "N[pow2]=[4:5]"])
    out = json.loads(capsys.readouterr().out)
    assert done.value.code == 0 and (out["summary"]["runs"], out["summary"]["exit_code"]) == (4, 0)
    assert [r["point"] for r in out["results"]][0] == {"N": 16, "BLOCK": 128}
    assert [r["grid"][0] for r in out["results"]] == [1, 1, 1, 1]
    assert [r["point"]["N"] for r in out["results"]] == [16, 16, 32, 32]


def test_cli_axis_errors_are_exit_2_with_the_token(capsys):
    with pytest.raises(SystemExit) as done:
        main(["launch", "--dry-run", str(CONFIGS / "vector_add.yaml"), "--axis", "N=[1:"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and "--axis 'N=[1:'" in err
