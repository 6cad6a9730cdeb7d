"""The spec's expression language, parsed with `ast` and evaluated by a whitelist.

Grammar (docs/spec.md): numbers, names (vars, scalar args and, in `check.expect`,
buffer args as NumPy arrays), `+ - * / // % **`, unary `+ -`, parentheses,
comparisons, `and` / `or` / `not`, string literals (`K == 'transposeNaive'`:
a string only compares with `==` and `!=`, for string-valued sweep axes), and
the calls `cdiv min max abs next_pow2 log2`; in
`check.expect` also `sqrt exp log sin cos tanh where abs maximum minimum`.
A tuple argument's elements are named like `t[0]` (`t[1][0]` when nested),
so a subscript with a constant index is part of a name. No attributes, other
subscripts, keywords or other calls. Nothing reaches `eval`.

Integers are unbounded in Python, so every integer result is capped at
MAX_INT_BITS and a power is refused before it is computed if its result
would exceed the cap: a huge power is an error, not a hang. The text is
bounded too (limits.py): its length, and the nesting of its syntax tree, so
that neither the parser nor the recursive checker and evaluator run out of
stack on `1+1+...` or deep parentheses.
"""
from __future__ import annotations

import ast
import functools
import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import SpecError, excerpt, shorten
from ..limits import MAX_EXPR_CHARS, MAX_EXPR_DEPTH, MAX_INT_BITS


def _cdiv(a, b):
    return -(-a // b)


def _next_pow2(x):
    x = int(x)
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def _log2(x):
    if isinstance(x, int) and x > 0 and x & (x - 1) == 0:
        return x.bit_length() - 1          # exact for powers of two
    return math.log2(x)


# name -> (function, minimum arg count, maximum arg count)
SCALAR_FUNCTIONS: dict[str, tuple[Callable, int, int]] = {
    "cdiv": (_cdiv, 2, 2),
    "min": (min, 2, 16),
    "max": (max, 2, 16),
    "abs": (abs, 1, 1),
    "next_pow2": (_next_pow2, 1, 1),
    "log2": (_log2, 1, 1),
}


def _array_functions() -> dict[str, tuple[Callable, int, int]]:
    import numpy as np
    return {
        "cdiv": (_cdiv, 2, 2),
        "min": (np.minimum, 2, 2),
        "max": (np.maximum, 2, 2),
        "abs": (np.abs, 1, 1),
        "next_pow2": (_next_pow2, 1, 1),
        "log2": (np.log2, 1, 1),
        "sqrt": (np.sqrt, 1, 1),
        "exp": (np.exp, 1, 1),
        "log": (np.log, 1, 1),
        "sin": (np.sin, 1, 1),
        "cos": (np.cos, 1, 1),
        "tanh": (np.tanh, 1, 1),
        "where": (np.where, 3, 3),
        "maximum": (np.maximum, 2, 2),
        "minimum": (np.minimum, 2, 2),
    }


ARRAY_FUNCTION_NAMES = frozenset(
    ["cdiv", "min", "max", "abs", "next_pow2", "log2", "sqrt", "exp", "log", "sin",
     "cos", "tanh", "where", "maximum", "minimum"])

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_}
_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


@dataclass(frozen=True)
class Expr:
    """A parsed expression; `names` are the free names it reads."""
    source: str
    tree: ast.expression = field(repr=False, compare=False)
    names: frozenset[str]
    arrays: bool = False        # parsed in the check.expect dialect

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        evaluator = _Evaluator(env, _array_functions() if self.arrays else SCALAR_FUNCTIONS)
        try:
            if not self.arrays:
                return evaluator.visit(self.tree.body)
            import numpy as np
            with np.errstate(all="ignore"):     # NaN/inf in a reference are data, not noise
                return evaluator.visit(self.tree.body)
        except ZeroDivisionError:
            raise SpecError(f"division by zero in {excerpt(self.source)}") from None
        except OverflowError:
            raise SpecError(f"numeric overflow in {excerpt(self.source)}") from None
        except (TypeError, ValueError) as exc:
            raise SpecError(f"cannot evaluate {excerpt(self.source)}: "
                            f"{shorten(str(exc), 120)}") from None


def result_shape(expr: Expr, shapes: Mapping[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The shape `expr` evaluates to when each name in `shapes` is an array of that
    shape and every other name a scalar: every function is elementwise, so it is
    the broadcast of its operands' shapes. Computed without any data, for a dry
    run; ValueError when two operands do not broadcast."""

    def shape(n: ast.AST) -> tuple[int, ...]:
        if isinstance(n, (ast.Name, ast.Subscript)):
            return tuple(shapes.get(_element_name(n), ()))
        if isinstance(n, ast.BinOp):
            return combined([n.left, n.right])
        if isinstance(n, ast.UnaryOp):
            return shape(n.operand)
        if isinstance(n, ast.Compare):
            return combined([n.left, *n.comparators])
        if isinstance(n, ast.Call):
            return combined(n.args)
        return ()

    def combined(operands: list[ast.AST]) -> tuple[int, ...]:
        """The broadcast of the operands' shapes; ValueError naming each one's."""
        found = [shape(o) for o in operands]
        try:
            return broadcast_shapes(*found)
        except ValueError:
            named = " and ".join(f"{excerpt(ast.unparse(o))} has shape {list(s)}"
                                 for o, s in zip(operands, found))
            raise ValueError(f"{named}, which do not broadcast") from None

    return tuple(shape(expr.tree.body))


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting rule (numpy.broadcast_shapes) without importing NumPy:
    from the last dimension, sizes must be equal or 1. ValueError otherwise."""
    out: list[int] = []
    for i in range(1, max(map(len, shapes), default=0) + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i and s[-i] != 1}
        if len(sizes) > 1:
            raise ValueError(f"shapes {', '.join(map(str, shapes))} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))


def parse_expr(value: Any, *, arrays: bool = False) -> Expr:
    """Parse a YAML value (number or string) into an Expr; SpecError if not allowed.

    An Expr is immutable, so the same text parses once per process: a sweep
    loads its spec once per point, and parsing dominated a dry run's points."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return _parse_cached(type(value), value, arrays)
    return _parse(value, arrays)


@functools.lru_cache(maxsize=4096)
def _parse_cached(kind: type, value: Any, arrays: bool) -> Expr:
    return _parse(value, arrays)        # `kind` keeps 1, 1.0 and True apart


def _parse(value: Any, arrays: bool) -> Expr:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SpecError(f"expected a number or an expression, got {excerpt(value)}")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise SpecError(f"integer exceeds {MAX_INT_BITS} bits")
    if isinstance(value, float) and not math.isfinite(value):
        # YAML's .nan / .inf (and 1e400): their repr is a name, not a literal.
        return Expr(repr(value), ast.Expression(body=ast.Constant(value)), frozenset(), arrays)
    source = value if isinstance(value, str) else repr(value)
    if len(source) > MAX_EXPR_CHARS:
        raise SpecError(f"expression of {len(source)} characters (at most {MAX_EXPR_CHARS}): "
                        f"{excerpt(source)}")
    if "\0" in source:
        raise SpecError(f"invalid expression {excerpt(source)}: it holds a NUL character")
    if source.isascii() and source.isdigit() and len(source) <= 80 and \
            (source == "0" or source[0] != "0"):
        # A plain integer, as each point of a sweep sets its vars: built without
        # ast.parse, which was a tenth of a point's spec load. Anything else
        # (0123, a huge number) takes the parser's path and its errors.
        number = int(source)
        if number.bit_length() <= MAX_INT_BITS:
            return Expr(source, ast.Expression(body=ast.Constant(number)), frozenset(), arrays)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"invalid expression {excerpt(source)}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:   # digits, nesting
        why = "nested too deeply" if not isinstance(exc, ValueError) else str(exc).split(";")[0]
        raise SpecError(f"invalid expression {excerpt(source)}: {why}") from None
    _check_depth(tree.body, source)
    allowed = ARRAY_FUNCTION_NAMES if arrays else frozenset(SCALAR_FUNCTIONS)
    names = _check_tree(tree.body, source, allowed)
    return Expr(source, tree, frozenset(names), arrays)


def _check_depth(root: ast.AST, source: str) -> None:
    """Refuse a tree nested deeper than MAX_EXPR_DEPTH (without recursing)."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPR_DEPTH:
            raise SpecError(f"expression nested more than {MAX_EXPR_DEPTH} levels deep: "
                            f"{excerpt(source)}")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _check_tree(node: ast.AST, source: str, functions: frozenset[str]) -> set[str]:
    """Reject every node the grammar does not allow; return the free names."""
    names: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Constant):
            if isinstance(n.value, bool) or not isinstance(n.value, (int, float, str)):
                raise SpecError(f"only numbers and strings are allowed as literals in "
                                f"{excerpt(source)}")
            if isinstance(n.value, int) and n.value.bit_length() > MAX_INT_BITS:
                raise SpecError(f"integer literal exceeds {MAX_INT_BITS} bits in "
                                f"{excerpt(source)}")
        elif isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Subscript) and (element := _element_name(n)):
            names.add(element)
        elif isinstance(n, ast.BinOp) and type(n.op) in _BINARY:
            visit(n.left)
            visit(n.right)
        elif isinstance(n, ast.UnaryOp) and type(n.op) in _UNARY:
            visit(n.operand)
        elif isinstance(n, ast.BoolOp):
            for v in n.values:
                visit(v)
        elif isinstance(n, ast.Compare) and all(type(op) in _COMPARE for op in n.ops):
            visit(n.left)
            for c in n.comparators:
                visit(c)
        elif isinstance(n, ast.Call):
            if not isinstance(n.func, ast.Name) or n.func.id not in functions:
                what = n.func.id if isinstance(n.func, ast.Name) else ast.unparse(n.func)
                import difflib
                close = difflib.get_close_matches(what, list(functions), n=1, cutoff=0.6)
                hint = f"did you mean {close[0]}? " if close else ""
                raise SpecError(f"call to {excerpt(what)} is not allowed in {excerpt(source)}; "
                                f"{hint}allowed: {', '.join(sorted(functions))}")
            if n.keywords:
                raise SpecError(f"keyword arguments are not allowed in {excerpt(source)}")
            for a in n.args:
                if isinstance(a, ast.Starred):
                    raise SpecError(f"*args is not allowed in {excerpt(source)}")
                visit(a)
        else:
            raise SpecError(f"{type(n).__name__} is not allowed in {excerpt(source)} "
                            "(only numbers, strings, names, tuple elements like t[0], "
                            "arithmetic, comparisons, and/or/not and the listed functions)")

    visit(node)
    return names


def _element_name(n: ast.AST) -> str | None:
    """`t[0]`, `t[1][0]`: a tuple element's name; None for any other expression."""
    if isinstance(n, ast.Name):
        return n.id
    if (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)
            and _is_int(n.slice.value) and n.slice.value >= 0):
        base = _element_name(n.value)
        return f"{base}[{n.slice.value}]" if base else None
    return None


class _Evaluator:
    def __init__(self, env: Mapping[str, Any], functions):
        self.env = env
        self.functions = functions

    def visit(self, n: ast.AST) -> Any:
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, (ast.Name, ast.Subscript)):
            name = _element_name(n)
            if name in self.functions and name not in self.env:
                raise SpecError(f"{name!r} is a function, call it")
            try:
                return self.env[name]
            except KeyError:
                known = shorten(", ".join(sorted(self.env)) or "none", 200)
                raise SpecError(f"unknown name {excerpt(name)} (known: {known})") from None
        if isinstance(n, ast.BinOp):
            left, right = self.visit(n.left), self.visit(n.right)
            _no_strings(n, left, right)
            if isinstance(n.op, ast.Pow):
                _check_power(left, right)
            return _capped(_BINARY[type(n.op)](left, right))
        if isinstance(n, ast.UnaryOp):
            operand = self.visit(n.operand)
            if not isinstance(n.op, ast.Not):
                _no_strings(n, operand)
            return _UNARY[type(n.op)](operand)
        if isinstance(n, ast.BoolOp):
            # Python's short circuit, but always a truth value (never an operand)
            want = isinstance(n.op, ast.Or)
            for v in n.values:
                if bool(self.visit(v)) == want:
                    return want
            return not want
        if isinstance(n, ast.Compare):
            left = self.visit(n.left)
            result = True
            for op, comp in zip(n.ops, n.comparators):
                right = self.visit(comp)
                _check_string_comparison(op, left, right)
                here = _COMPARE[type(op)](left, right)
                result = here if result is True else result & here
                left = right
            return result
        if isinstance(n, ast.Call):
            fn, lo, hi = self.functions[n.func.id]
            if not lo <= len(n.args) <= hi:
                raise SpecError(f"{n.func.id}() takes {lo if lo == hi else f'{lo} to {hi}'} "
                                f"arguments, got {len(n.args)}")
            args = [self.visit(a) for a in n.args]
            _no_strings(n, *args)
            return _capped(fn(*args))
        raise AssertionError(f"unchecked node {type(n).__name__}")


def _no_strings(node: ast.AST, *values) -> None:
    """Strings (string-valued sweep axes) take part in no arithmetic or call:
    `K * 3` must not build a string, and `min('a', 'b')` means nothing here."""
    for value in values:
        if isinstance(value, str):
            raise SpecError(f"{excerpt(value)} is a string: strings only compare with == "
                            f"and != (in {excerpt(ast.unparse(node))})")


def _check_string_comparison(op: ast.cmpop, left, right) -> None:
    if isinstance(left, str) or isinstance(right, str):
        if not isinstance(op, (ast.Eq, ast.NotEq)):
            raise SpecError(f"strings only compare with == and !=, not "
                            f"{_OPERATOR_TEXT.get(type(op), '?')}")
        if not (isinstance(left, str) and isinstance(right, str)):
            raise SpecError(f"compares the string {excerpt(left if isinstance(left, str) else right)}"
                            f" with the number {excerpt(right if isinstance(left, str) else left)}")


_OPERATOR_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_power(base, exponent) -> None:
    if _is_int(base) and _is_int(exponent):
        if exponent < 0:
            return                           # a float result, bounded
        if abs(base) > 1 and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS:
            raise SpecError(f"{base} ** {exponent} is too large "
                            f"(integer results are limited to {MAX_INT_BITS} bits)")


def _capped(value):
    if isinstance(value, complex):
        raise SpecError("the result is a complex number")
    if _is_int(value) and value.bit_length() > MAX_INT_BITS:
        raise SpecError(f"integer result exceeds {MAX_INT_BITS} bits")
    return value
