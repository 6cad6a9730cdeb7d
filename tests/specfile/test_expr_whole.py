"""The whole-array operations of `check.expect` against NumPy itself: values,
the shapes `Expr.plan` works out without data, and the errors naming shapes."""
from __future__ import annotations

import re

import numpy as np
import pytest

from cubinrun.errors import SpecError
from cubinrun.specfile.expr import parse_expr

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

RNG = np.random.default_rng(1)
A, B, X = RNG.random((4, 3)), RNG.random((3, 5)), RNG.random((3, 4))
V = RNG.random(3)
ENV = {"A": A, "B": B, "x": X, "v": V, "N": 2, "K": 1}
SHAPES = {n: a.shape for n, a in ENV.items() if isinstance(a, np.ndarray)}
SCALARS = {"N": 2, "K": 1}

CASES = [
    ("A @ B", A @ B),
    ("A @ v", A @ V),
    ("v @ B", V @ B),
    ("v @ v", V @ V),
    ("sum(x)", X.sum()),
    ("sum(x, axis=0)", X.sum(axis=0)),
    ("sum(x, axis=-1)", X.sum(axis=-1)),
    ("mean(x, axis=1)", X.mean(axis=1)),
    ("max(x, axis=0)", X.max(axis=0)),
    ("min(x)", X.min()),
    ("prod(x, axis=K)", X.prod(axis=1)),
    ("max(x, 0.5)", np.maximum(X, 0.5)),            # two arguments: still elementwise
    ("cumsum(x, axis=1)", X.cumsum(axis=1)),
    ("cumsum(x)", X.cumsum()),
    ("transpose(x)", X.T),
    ("x.T @ A.T", X.T @ A.T),
    ("reshape(x, [4, 3])", X.reshape(4, 3)),
    ("reshape(x, [-1, N])", X.reshape(-1, 2)),
    ("roll(x, 1, axis=1)", np.roll(X, 1, axis=1)),
    ("roll(x, -N)", np.roll(X, -2)),
    ("x[1:-1, :]", X[1:-1, :]),
    ("x[::2]", X[::2]),
    ("x[:, N:]", X[:, 2:]),
    ("x[N - 1, ::-1]", X[1, ::-1]),
    ("x[1]", X[1]),
    ("x[1:, 1:] - x[:-1, :-1]", X[1:, 1:] - X[:-1, :-1]),
    ("astype(x, fp16)", X.astype(np.float16).astype(np.float64)),
    ("astype(x * 100, i8)", (X * 100).astype(np.int8).astype(np.int64)),
    ("sum(A @ B, axis=0) / N", (A @ B).sum(axis=0) / 2),
]


@pytest.mark.parametrize("source, expected", CASES, ids=[c[0] for c in CASES])
def test_each_operation_is_numpys(source, expected):
    expr = parse_expr(source, arrays=True)
    got = expr.evaluate(ENV)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    shape, need = expr.plan(SHAPES, SCALARS)
    assert shape == np.shape(expected)
    assert need >= 8 * np.size(expected)


@pytest.mark.parametrize("source, fragment", [
    ("A @ x", "shapes [4, 3] @ [3, 4]: inner sizes 3 and 3"),
    ("A @ A", "shapes [4, 3] @ [4, 3]: inner sizes 3 and 4 differ"),
    ("A @ 2", "@ needs arrays on both sides"),
    ("sum(x, axis=2)", "axis=2 is out of range for sum() of shape [3, 4]"),
    ("reshape(x, [5, 3])", "cannot reshape shape [3, 4] (12 elements) into [5, 3]"),
    ("reshape(x, [-1, 5])", "cannot reshape shape [3, 4]"),
    ("x[1, 2, 3]", "3 indices for shape [3, 4]"),
    ("x[7]", "index 7 is out of range for size 3"),
    ("x[::0]", "slice step cannot be zero"),
    ("x[0.5:]", "a slice bound must be an integer"),
    ("roll(x, 1, axis=3)", "axis=3 is out of range for roll()"),
])
def test_shape_errors_name_the_shapes_with_and_without_data(source, fragment):
    expr = parse_expr(source, arrays=True)
    if "inner sizes 3 and 3" in fragment:       # A @ x is fine: [4, 3] @ [3, 4]
        assert expr.plan(SHAPES, SCALARS)[0] == (4, 4)
        return
    with pytest.raises(SpecError, match=re.escape(fragment)):
        expr.plan(SHAPES, SCALARS)
    with pytest.raises(SpecError, match=re.escape(fragment)):
        expr.evaluate(ENV)


def test_arithmetic_errors_in_bounds_and_axes_are_spec_errors():
    for source in ("x[N // 0:]", "sum(x, axis=K % 0)", "reshape(x, [N / 0])"):
        with pytest.raises(SpecError, match="division by zero"):
            parse_expr(source, arrays=True).plan(SHAPES, SCALARS)
    from cubinrun.specfile.expr import region_parts
    tree = parse_expr("y[1:N // 0]", arrays=True).tree.body
    with pytest.raises(SpecError, match="cannot evaluate 'y\\[1:N // 0\\]'"):
        region_parts(tree, SCALARS)


@pytest.mark.parametrize("source, fragment", [
    ("x.shape", "the attribute .shape (only .T)"),
    ("sum(x, keepdims=1)", "keyword 'keepdims' is not allowed in sum()"),
    ("transpose(x, axis=0)", "keyword 'axis' is not allowed in transpose()"),
    ("reshape(x, 12)", "reshape() takes a list of dimensions"),
    ("astype(x, float)", "astype() takes an element type"),
    ("sum(x, y)", "sum() takes 1 positional argument, got 2"),
    ("roll(x)", "roll() takes 2 positional arguments, got 1"),
    ("x[[0, 1]]", "List is not allowed"),
    ("maximum(x, y, axis=0)", "keyword arguments are not allowed"),
])
def test_the_whitelist_refuses_what_it_does_not_name(source, fragment):
    with pytest.raises(SpecError, match=re.escape(fragment)):
        parse_expr(source, arrays=True)


def test_only_the_check_dialect_has_whole_operations():
    for source in ("A @ B", "x.T", "x[1:]", "sum(x)"):
        with pytest.raises(SpecError):
            parse_expr(source)
        assert parse_expr(source, arrays=True).whole
    assert not parse_expr("max(x, y) + sqrt(x)", arrays=True).whole


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@settings(max_examples=60, deadline=None)
@given(shape=shapes, data=st.data())
def test_reductions_and_slices_match_numpy_for_any_shape(shape, data):
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 3.5
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    name = data.draw(st.sampled_from(["sum", "mean", "max", "min", "prod", "cumsum"]))
    expr = parse_expr(f"{name}(x, axis={axis})", arrays=True)
    expected = getattr(np, name)(x, axis=axis)
    np.testing.assert_allclose(expr.evaluate({"x": x}), expected)
    assert expr.plan({"x": shape}, {})[0] == expected.shape
    bounds = [data.draw(st.tuples(st.integers(-5, 5), st.integers(-5, 5),
                                  st.sampled_from([1, 2, -1, 3]))) for _ in shape]
    text = ", ".join(f"{lo}:{hi}:{step}" for lo, hi, step in bounds)
    expr = parse_expr(f"x[{text}]", arrays=True)
    expected = x[tuple(slice(lo, hi, step) for lo, hi, step in bounds)]
    np.testing.assert_array_equal(expr.evaluate({"x": x}), expected)
    assert expr.plan({"x": shape}, {})[0] == expected.shape


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 5), k=st.integers(1, 5), n=st.integers(1, 5),
       batch=st.sampled_from([(), (2,), (3, 1)]))
def test_matmul_shapes_match_numpy(m, k, n, batch):
    a = np.ones(batch + (m, k))
    b = np.ones((k, n))
    expr = parse_expr("a @ b", arrays=True)
    assert expr.plan({"a": a.shape, "b": b.shape}, {})[0] == (a @ b).shape
    np.testing.assert_array_equal(expr.evaluate({"a": a, "b": b}), a @ b)
