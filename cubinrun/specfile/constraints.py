"""`constraints:` (a top-level key of the spec) and `--constraint EXPR`: the
expressions over vars that must be true for a sweep's point to run
(`BX == BY * TY`, `K == 'transposeNaive' or BX <= 32`).

Each is parsed once (specfile/expr.py) and must be a truth value: a
comparison, `and`/`or` or `not` (`BX * BY` alone is a typo). The spec's name
their YAML line; a `--constraint` that does not parse is a usage error quoting
it. Whether a point passes them is the sweep space's question (sweep.py).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import SpecError, UsageError, excerpt
from .expr import Expr, parse_expr


@dataclass(frozen=True)
class Constraint:
    expr: Expr
    where: str                      # `constraints[1]` or `--constraint`
    line: int | None = None         # its YAML line, for the spec's constraints

    @property
    def text(self) -> str:
        return self.expr.source

    def error(self, message: str) -> SpecError:
        return _located(self.where, self.line, self.text, message)


def spec_constraints(tree: Any) -> list[Constraint]:
    """The spec's `constraints:`, each with its YAML line."""
    node = tree.get("constraints")
    if node is None:
        return []
    if not isinstance(node, list):
        raise SpecError("must be a list of expressions (BX * BY <= 1024)", field="constraints",
                        line=tree.line_of("constraints"))
    out = []
    for i, item in enumerate(node):
        line = node.line_of(i) if hasattr(node, "line_of") else None
        out.append(_constraint(item, f"constraints[{i}]", line))
    return out


def parse_cli_constraints(texts: Sequence[str]) -> list[Constraint]:
    """`--constraint EXPR` options; a usage error (exit 2) quoting one that does not parse."""
    out = []
    for text in texts:
        try:
            out.append(_constraint(text, "--constraint", None))
        except SpecError as exc:
            raise UsageError(str(exc)) from None
    return out


def _constraint(value: Any, where: str, line: int | None) -> Constraint:
    if not isinstance(value, str):
        raise _located(where, line, value, "must be an expression that is true or false "
                                           "(BX * BY <= 1024)")
    try:
        expr = parse_expr(value)
    except SpecError as exc:
        raise _located(where, line, value, exc.message) from None
    if not _is_truth_value(expr.tree.body):
        raise _located(where, line, value, "must be a comparison, true or false "
                                           "(BX * BY <= 1024, K == 'name')")
    return Constraint(expr, where, line)


def _is_truth_value(node: ast.AST) -> bool:
    """A comparison, and/or, or not: what a constraint must be (`BX * BY` is a typo)."""
    return isinstance(node, (ast.Compare, ast.BoolOp)) or \
        (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))


def _located(where: str, line: int | None, value: Any, message: str) -> SpecError:
    if where.startswith("--"):
        return SpecError(f"{where} {excerpt(value)}: {message}")
    return SpecError(message, field=where, line=line)
