import math
import re

import numpy as np
import pytest

from cubinrun.errors import SpecError
from cubinrun.specfile.expr import MAX_INT_BITS, parse_expr


def ev(text, **env):
    return parse_expr(text).evaluate(env)


@pytest.mark.parametrize("text, expected", [
    ("1 + 2 * 3", 7),
    ("(1 + 2) * 3", 9),
    ("7 // 2", 3),
    ("7 / 2", 3.5),
    ("-7 % 3", 2),
    ("2 ** 10", 1024),
    ("2 ** -1", 0.5),
    ("cdiv(1000, 128)", 8),
    ("cdiv(1024, 128)", 8),
    ("min(3, 1, 2)", 1),
    ("max(3, 7)", 7),
    ("abs(-4)", 4),
    ("next_pow2(1)", 1),
    ("next_pow2(0)", 1),
    ("next_pow2(100)", 128),
    ("next_pow2(128)", 128),
    ("log2(1024)", 10),
    ("3 < 4", True),
    ("1 < 2 < 3", True),
    ("1 < 3 < 2", False),
    ("1e-6", 1e-6),
])
def test_scalar_grammar(text, expected):
    assert ev(text) == expected


def test_log2_of_power_of_two_is_exact_int():
    assert ev("log2(2 ** 40)") == 40 and isinstance(ev("log2(2 ** 40)"), int)
    assert math.isclose(ev("log2(10)"), math.log2(10))


def test_names_resolve_from_env_and_are_reported():
    e = parse_expr("cdiv(N, BLOCK) * num_ctas")
    assert e.names == {"N", "BLOCK", "num_ctas"}
    assert e.evaluate({"N": 1000, "BLOCK": 256, "num_ctas": 2}) == 8


def test_numbers_are_expressions_too():
    assert parse_expr(4096).evaluate({}) == 4096
    assert parse_expr(0.5).evaluate({}) == 0.5


@pytest.mark.parametrize("text, fragment", [
    ("__import__('os')", "not allowed"),
    ("open('x')", "call to 'open' is not allowed"),
    ("x.real", "Attribute is not allowed"),
    ("x[n]", "Subscript is not allowed"),
    ("x[-1]", "Subscript is not allowed"),
    ("lambda: 1", "Lambda is not allowed"),
    ("[1, 2]", "List is not allowed"),
    ("b'text'", "only numbers and strings"),
    ("True", "only numbers"),
    ("1 if x else 2", "IfExp is not allowed"),
    ("x is 1", "Compare is not allowed"),
    ("1 << 4", "BinOp is not allowed"),
    ("max(x, key=1)", "keyword arguments"),
    ("max(*x)", "*args"),
    ("sqrt(4)", "call to 'sqrt' is not allowed"),   # array functions only in check.expect
    ("(x := 1)", "NamedExpr is not allowed"),
    ("1 +", "invalid expression"),
])
def test_disallowed_syntax_is_a_spec_error(text, fragment):
    with pytest.raises(SpecError, match=re.escape(fragment)):
        parse_expr(text).evaluate({"x": 1})


def test_non_number_values_are_refused():
    for value in (True, None, [1], {"a": 1}):
        with pytest.raises(SpecError, match="expected a number or an expression"):
            parse_expr(value)


@pytest.mark.parametrize("text", ["2 ** 100000", "9 ** 9 ** 9", "10 ** 78 * 10 ** 78",
                                  "(2 ** 200) * (2 ** 200)"])
def test_huge_integers_are_refused_quickly(text):
    with pytest.raises(SpecError, match=f"{MAX_INT_BITS} bits"):
        ev(text)


def test_float_overflow_division_by_zero_and_complex_are_errors():
    with pytest.raises(SpecError, match="overflow"):
        ev("10.0 ** 400")
    with pytest.raises(SpecError, match="division by zero"):
        ev("1 // 0")
    with pytest.raises(SpecError, match="division by zero"):
        ev("cdiv(4, 0)")
    with pytest.raises(SpecError, match="complex"):
        ev("(-8) ** 0.5")


def test_unknown_name_lists_known_names():
    with pytest.raises(SpecError, match=r"unknown name 'M' \(known: N\)"):
        ev("M + 1", N=2)


def test_wrong_arity():
    with pytest.raises(SpecError, match="cdiv\\(\\) takes 2 arguments, got 1"):
        ev("cdiv(4)")
    with pytest.raises(SpecError, match="a function, call it"):
        ev("cdiv + 1")


def test_array_dialect_elementwise():
    x = np.array([4.0, -1.0, 0.0])
    y = np.array([1.0, 2.0, 3.0])
    e = parse_expr("where(x > 0, sqrt(x), 0) + maximum(y, 2) - minimum(x, y) * tanh(0)",
                   arrays=True)
    np.testing.assert_array_equal(e.evaluate({"x": x, "y": y}), [4.0, 2.0, 3.0])
    e = parse_expr("exp(log(y)) + sin(0) + cos(0) + abs(x)", arrays=True)
    np.testing.assert_allclose(e.evaluate({"x": x, "y": y}), y + 1 + np.abs(x))


def test_array_dialect_still_refuses_other_calls():
    with pytest.raises(SpecError, match="call to 'dot' is not allowed"):
        parse_expr("dot(x, y)", arrays=True)
    with pytest.raises(SpecError, match="call to 'sum' is not allowed"):
        parse_expr("sum(x)")                    # the scalar dialect has no reductions


def test_tuple_elements_are_names():
    expr = parse_expr("t[0] + 2 * t[1][2]")
    assert expr.names == {"t[0]", "t[1][2]"}
    assert expr.evaluate({"t[0]": 1, "t[1][2]": 3}) == 7
    with pytest.raises(SpecError, match=r"unknown name 't\[1\]\[2\]' \(known: t\[0\]\)"):
        expr.evaluate({"t[0]": 1})


def test_tuple_elements_in_check_expressions_are_arrays():
    expr = parse_expr("where(t[0] > 0, t[1], -t[1])", arrays=True)
    out = expr.evaluate({"t[0]": np.array([1.0, -1.0]), "t[1]": np.array([2.0, 3.0])})
    assert out.tolist() == [2.0, -3.0]


@pytest.mark.parametrize("text, env, expected", [
    ("K == 'transposeNaive'", {"K": "transposeNaive"}, True),
    ("K != 'a' and B <= 32", {"K": "b", "B": 32}, True),
    ("K == 'a' or B > 32", {"K": "b", "B": 32}, False),
    ("not (B == 3)", {"B": 3}, False),
    ("B == 1 or 1 / 0", {"B": 1}, True),            # short circuit, as Python
    ("B and 7", {"B": 2}, True),                    # a truth value, never an operand
])
def test_strings_and_boolean_operators(text, env, expected):
    assert parse_expr(text).evaluate(env) is expected


@pytest.mark.parametrize("text, fragment", [
    ("K * 3", "strings only compare with == and !="),
    ("-K", "strings only compare"),
    ("min(K, K)", "strings only compare"),
    ("K < 'b'", "not <"),
    ("K == 3", "compares the string 'a' with the number 3"),
])
def test_strings_take_part_in_no_arithmetic(text, fragment):
    with pytest.raises(SpecError, match=re.escape(fragment)):
        parse_expr(text).evaluate({"K": "a"})


def test_a_parameter_named_like_a_python_keyword_is_a_name():
    assert ev("from * 2 + lambda", **{"from": 3, "lambda": 1}) == 7
    assert parse_expr("in.T", arrays=True).names == {"in"}
    assert parse_expr("K == 'in'").names == {"K"}              # a string stays a string
    assert ev("not x and y or z", x=0, y=1, z=0) is True      # the grammar's own words
    with pytest.raises(SpecError, match="invalid syntax"):
        parse_expr("in +")
