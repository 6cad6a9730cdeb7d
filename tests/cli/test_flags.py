"""The command line as people type it (issue 17): --debug, --json and --no-color
before or after the command, output that survives a pipe, and bad numbers
refused by the same rule on the command line as in a spec."""
from __future__ import annotations

import json
import os
import re

import pytest

from support.cli import one_error_line, run
from support.repo import CONFIGS
from support.specs import BASE, spec  # noqa: F401  (fixtures)

VECTOR_ADD = CONFIGS / "vector_add.yaml"
COLOUR = re.compile(r"\x1b\[(3|9)[0-7]m")       # a foreground colour, not bold


@pytest.mark.parametrize("args", [
    ("--debug", "launch", "--dry-run", "nope.yaml"),
    ("launch", "--debug", "--dry-run", "nope.yaml"),
    ("launch", "--dry-run", "nope.yaml", "--debug"),
])
def test_debug_works_before_and_after_the_command(capsys, args):
    code, _, err = run(capsys, *args)
    assert code == 2 and "Traceback" in err and err.rstrip().endswith("nope.yaml: no such file")


def test_debug_does_not_outlive_its_command(capsys):
    run(capsys, "launch", "--debug", "nope.yaml")
    code, _, err = run(capsys, "launch", "nope.yaml")
    assert code == 2 and one_error_line(err) == "error: nope.yaml: no such file"


@pytest.mark.parametrize("args", [
    ("--json", "launch", "--dry-run", VECTOR_ADD),
    ("launch", "--json", "--dry-run", VECTOR_ADD),
    ("launch", "--dry-run", VECTOR_ADD, "--json"),
])
def test_json_works_before_and_after_the_command(capsys, args):
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert json.loads(out)["kernel"] == "add_kernel"


def test_json_before_a_command_without_json_output_is_refused(capsys):
    code, out, err = run(capsys, "--json", "gen", VECTOR_ADD)
    assert code == 2 and out == "" and "cubinrun gen has no --json output" in err


@pytest.fixture
def empty_grid(spec):                           # a plan with a coloured warning in it
    return spec(BASE.replace("grid: [4]", "grid: [0]"))


def test_colour_follows_force_color_without_no_color(capsys, monkeypatch, empty_grid):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, out, _ = run(capsys, "launch", "--dry-run", empty_grid)
    assert code == 0 and COLOUR.search(out)


@pytest.mark.parametrize("where", ["before", "after"])
def test_no_color_removes_colour_for_this_command_only(capsys, monkeypatch, empty_grid, where):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    args = ["launch", "--dry-run", empty_grid]
    code, out, _ = run(capsys, *(["--no-color", *args] if where == "before"
                                 else [*args, "--no-color"]))
    assert code == 0 and "the grid is empty" in out and not COLOUR.search(out)
    assert "NO_COLOR" not in os.environ


def test_piped_output_never_wraps_paths(capsys, spec):
    """The dry run's plan names the launcher by its full path: rich wrapped it at
    80 columns when stdout was not a terminal."""
    long_name = spec(BASE, name="a_spec_with_a_name_long_enough_to_matter_" + "x" * 60 + ".yaml")
    code, out, err = run(capsys, "launch", "--dry-run", long_name)
    assert code == 0, err
    launcher = next(line for line in out.splitlines() if "launcher " in line)
    path = launcher.split("launcher ", 1)[1]
    assert len(path) > 80 and os.path.isfile(path)
    code, out, err = run(capsys, "launch", "--dry-run", long_name, long_name)
    assert code == 0, err
    assert sum(str(long_name) in line for line in out.splitlines()) == 2


# --- numbers on the command line and in a spec: one rule ------------------

@pytest.mark.parametrize("typed, written", [
    ("-1", "-1"), ("0", "0"), ("nan", ".nan"), ("inf", ".inf"), ("1e400", "1e400"),
    ("3600001", "3600001"),
])
@pytest.mark.parametrize("name", ["warmup", "rep"])
def test_timing_budgets_follow_one_rule_on_the_command_line_and_in_a_spec(capsys, spec, name,
                                                                          typed, written):
    code, _, err = run(capsys, "launch", "--dry-run", VECTOR_ADD, f"--{name}", typed)
    on_the_command_line = one_error_line(err).split(f"error: --{name} ", 1)[1]
    assert code == 2
    code, _, err = run(capsys, "launch", "--dry-run",
                       spec(BASE + f"bench: {{{name}: {written}}}\n"))
    in_the_spec = one_error_line(err).split(f"bench.{name}: ", 1)[1]
    assert code == 2
    rule = ", got"
    assert in_the_spec.split(rule)[0] == on_the_command_line.split(rule)[0] == \
        "must be a positive number of ms up to 3600000"


@pytest.mark.parametrize("value", ["0.5", "3600000"])
def test_timing_budgets_in_range_pass_both_ways(capsys, spec, value):
    code, _, err = run(capsys, "launch", "--dry-run", VECTOR_ADD, "--warmup", value, "--rep", value)
    assert code == 0, err
    code, _, err = run(capsys, "launch", "--dry-run",
                       spec(BASE + f"bench: {{warmup: {value}, rep: {value}}}\n"))
    assert code == 0, err


@pytest.mark.parametrize("value", ["nan", "-1%", "150%", "1.5", "x"])
def test_a_bad_threshold_is_refused_even_when_unused(capsys, value):
    code, _, err = run(capsys, "launch", "--dry-run", VECTOR_ADD, "--threshold", value)
    assert code == 2 and one_error_line(err).startswith(f"error: --threshold {value!r}")
