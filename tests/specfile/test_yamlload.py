"""Specs are read by the YAML 1.2 core schema, not PyYAML's YAML 1.1 (issue 17):
numbers and booleans mean what every current YAML tool says they mean, a
leading-zero integer is refused, and a float used as an integer is reported
where it was written."""
from __future__ import annotations

import math

import pytest

from cubinrun.errors import SpecError
from cubinrun.specfile.yamlload import load_yaml_text

from support.cli import error_line
from support.specs import BASE, spec  # noqa: F401  (fixtures)


@pytest.mark.parametrize("text, value", [
    ("1e-6", 1e-6), ("1e3", 1000.0), ("-2.5E+2", -250.0), ("1.", 1.0), (".5", 0.5),
    ("12", 12), ("-3", -3), ("+4", 4), ("0", 0), ("-0", 0), ("0o17", 15), ("0x1f", 31),
    ("true", True), ("FALSE", False), ("~", None), ("null", None), ("", None),
    # YAML 1.1 reads these as true, true, false, 90, 5 and a date: 1.2 as strings
    ("yes", "yes"), ("on", "on"), ("off", "off"), ("1:30", "1:30"), ("0b101", "0b101"),
    ("2024-01-01", "2024-01-01"), ("1_000", "1_000"), ("=", "="),
    ('"012"', "012"), ("!!float 3", 3.0), ("!!int 0x10", 16),
])
def test_plain_scalars_follow_the_yaml_1_2_core_schema(text, value):
    got = load_yaml_text(f"a: {text}\n")["a"]
    assert got == value and type(got) is type(value), (text, got)


@pytest.mark.parametrize("text, check", [
    (".inf", lambda v: v == math.inf), ("-.Inf", lambda v: v == -math.inf),
    (".NaN", math.isnan), ("1e400", lambda v: v == math.inf),
])
def test_infinities_and_nan_are_kept(text, check):
    assert check(load_yaml_text(f"a: {text}\n")["a"])


@pytest.mark.parametrize("text, advice", [
    ("012", 'write 12 for decimal, 0o12 for octal, or "012" for a string'),
    ("-012", 'write -12 for decimal, or "-012" for a string'),
    ("019", "YAML 1.1 reads as a string"),
    ("00", 'write 0 for decimal, or "00" for a string'),
])
def test_a_leading_zero_integer_is_refused_not_guessed(text, advice):
    with pytest.raises(SpecError) as error:
        load_yaml_text(f"x: 1\nN: {text}\n", file="s.yaml")
    assert str(error.value).startswith(f"s.yaml:2: {text} has a leading zero") and \
        advice in str(error.value)


@pytest.mark.parametrize("text, message", [
    ("!!int 1:30", "'1:30' is not a YAML 1.2 integer"),
    ("!!float 1:30", "'1:30' is not a YAML 1.2 float"),
    ("!!bool yes", "'yes' is not a YAML 1.2 boolean"),
])
def test_explicit_tags_follow_the_core_schema_too(text, message):
    with pytest.raises(SpecError, match=message):
        load_yaml_text(f"a: {text}\n")


def test_merge_keys_still_merge():
    tree = load_yaml_text("base: &b {a: 1}\nc:\n  <<: *b\n  d: 2\n")
    assert tree["c"] == {"a": 1, "d": 2}


def test_a_leading_zero_in_a_spec_is_one_line_with_its_line(capsys, spec):
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace("N: 1024", "N: 01024")))
    assert ":10: 01024 has a leading zero" in line


def test_exponent_floats_reach_numeric_fields_as_numbers(spec):
    from cubinrun.specfile import load_spec
    text = BASE.replace("grid: [4]", "grid: [4]\ncheck:\n  out: {expect: x + y, rtol: 1e-6, "
                        "atol: 2.5e-7}\nbench: {warmup: 1e1, rep: 2e2, bytes: 12 * N}")
    loaded = load_spec(spec(text))
    assert (loaded.checks[0].rtol, loaded.checks[0].atol) == (1e-6, 2.5e-7)
    assert (loaded.bench.warmup_ms, loaded.bench.rep_ms) == (10.0, 200.0)


@pytest.mark.parametrize("edit, where, message", [
    # a float var used as a shape: reported at the var, with the fix
    (("N: 1024", "N: 1e3"), ":10: vars.N: ", "is 1000.0, a float, but args.x.shape[0] needs "
     "an integer: write 1000"),
    # through another var: still where the float was written
    (("N: 1024", "N: M\n  M: 1e3"), ":11: vars.M: ", "args.x.shape[0] needs an integer"),
    # an expression that divides: at the var, with the hint
    (("N: 1024", "N: H / 2\n  H: 2048"), ":10: vars.N: ", "'H / 2' is 1024.0, a float, but "
     "args.x.shape[0] needs an integer: // divides to an integer"),
    # a scalar argument of an integer type
    (("  n: N", "  n: K"), ":11: vars.K: ", "is 1000.0, a float, but args.n needs an integer"),
    # no var to blame: where it is used, as before
    (("x: {shape: [N]", "x: {shape: [N / 2]"),
     ":12: args.x.shape[0]: ", "must be an integer, got 512.0"),
])
def test_a_float_used_as_an_integer_is_reported_where_it_was_written(capsys, spec, edit, where,
                                                                      message):
    text = BASE.replace(*edit, 1)
    if "K" in edit[1]:
        text = text.replace("N: 1024", "N: 1024\n  K: 1e3")
    line = error_line(capsys, "launch", "--dry-run", spec(text))
    assert where in line and message in line, line


def test_a_float_from_the_command_line_is_reported_at_set(capsys, spec):
    line = error_line(capsys, "launch", "--dry-run", spec(BASE), "--set", "N=1e3")
    assert "--set N: '1e3' is 1000.0, a float, but args.x.shape[0] needs an integer" in line


@pytest.mark.parametrize("edit, message", [
    (("grid: [4]", "grid: [4]\ncheck:\n  out: {expect: x + y, rtol: .nan}"),
     "check.out.rtol: must be a non-negative number, got nan"),
    (("grid: [4]", "grid: [4]\nbench: {bytes: 1e400}"),
     "bench.bytes: must be a finite number >= 0, got inf"),
    (("grid: [4]", "grid: [-.inf]"), "grid[0]: must be an integer, got -inf"),
])
def test_infinite_and_nan_yaml_floats_are_checked_as_numbers(capsys, spec, edit, message):
    assert message in error_line(capsys, "launch", "--dry-run", spec(BASE.replace(*edit)))
