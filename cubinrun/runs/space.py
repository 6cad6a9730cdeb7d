"""A spec's sweep space: its axes (with `--axis` and `--set`), its constraints
and what an invalid point means (SPEC sections 3 and 5).

This is the one place that knows which points of a sweep run: `launch`
expands it into runs (runs/expand.py) and `tune` searches it.

    space = sweep_space("mm.yaml", overrides, cli_axes, ["BX * BY <= 1024"])
    space.size                  # points before constraints, counted, never built
    for p in space.points():    # SpacePoint: p.values, p.runnable, p.failed (a Constraint)
        ...
    space.check(values)         # the first Constraint `values` fails, or None
    space.invalid_skip          # `sweep_invalid: skip`: invalid points leave the exit code

A constraint is an expression over vars (specfile/expr.py) that must be true
for a point to run: `BX == BY * TY`, `K == 'transposeNaive' or BX <= 32`.
Names it reads must be vars; any other is the spec's error (exit 2, naming
its line). An invalid point is one whose build or load hits a resource
limit of the kernel: errors.ResourceLimitError, `errors.invalid_reason`.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import SpecError, UsageError, excerpt
from ..specfile.expr import Expr, parse_expr
from ..limits import MAX_CONSTRAINTS
from .axes import (Axis, AxisError, Value, check_point_count, iter_points, override_text,
                   spec_axis, spec_error)

SWEEP_INVALID = ("error", "skip")


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


@dataclass(frozen=True)
class SpacePoint:
    values: dict[str, Value]
    failed: Constraint | None = None        # the first constraint it fails

    @property
    def runnable(self) -> bool:
        return self.failed is None


@dataclass
class SweepSpace:
    spec: str
    axes: list[Axis]
    constraints: tuple[Constraint, ...]
    invalid_skip: bool
    overrides: dict[str, str]               # --set: every point has them too
    tree: Any = None

    @functools.cached_property
    def _reads(self) -> frozenset[str]:
        """The vars the constraints read."""
        return frozenset().union(*(c.expr.names for c in self.constraints))

    @property
    def size(self) -> int:
        return check_point_count(self.axes)

    @property
    def pow2(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes if a.pow2)

    def points(self) -> Iterator[SpacePoint]:
        """Every point in order (the first axis outermost), each checked."""
        for values in iter_points(self.axes):
            yield SpacePoint(values, self.check(values))

    def check(self, values: Mapping[str, Value]) -> Constraint | None:
        """The first constraint the point fails; None when it runs. SpecError when
        a constraint cannot be evaluated there (a division by zero, a string
        compared with a number)."""
        if not self.constraints:
            return None
        env: Mapping[str, Any] = values
        if not self._reads <= values.keys():
            # a constraint reads a var the point does not set (a derived var, a
            # default, --set): resolve the spec's vars at this point, lazily
            from ..specfile.loader import var_values
            env = var_values(self.spec, self.tree, point_overrides(self.overrides, values))
        for constraint in self.constraints:
            try:
                result = constraint.expr.evaluate(env)
            except SpecError as exc:
                if exc.field:                   # a var's own error: it names its line
                    raise
                raise constraint.error(exc.message) from None
            if not isinstance(result, bool):
                raise constraint.error(f"gave {excerpt(result)}, not true or false")
            if not result:
                return constraint
        return None


def point_overrides(overrides: Mapping[str, str], values: Mapping[str, Value]) -> dict[str, str]:
    """--set and a point's values, as the spec loader takes them."""
    return {**overrides, **{k: override_text(v) for k, v in values.items()}}


def sweep_space(spec: str | Path, overrides: Mapping[str, str] | None = None,
                cli_axes: Sequence[Axis] = (), cli_constraints: Sequence[str] = ()) -> SweepSpace:
    """The space of one spec. SpecError for the spec's own mistakes (its sweep,
    constraints, sweep_invalid; located by the caller with its file);
    UsageError for a --constraint that does not parse."""
    from ..specfile.yamlload import load_yaml_file
    spec = str(spec)
    overrides = dict(overrides or {})
    tree = load_yaml_file(Path(spec))
    if not isinstance(tree, dict):              # the loader says what is wrong
        return SweepSpace(spec, [], (), False, overrides, tree)
    var_node = tree.get("vars")
    var_names = [str(v) for v in var_node] if isinstance(var_node, dict) else []
    axes = _spec_axes(tree, var_names)
    for axis in cli_axes:
        if axis.name not in var_names:
            raise SpecError(f"--axis {axis.name}: no such var (vars: "
                            f"{', '.join(var_names) or 'none'})")
        axes[axis.name] = axis
    constraints = _spec_constraints(tree) + parse_cli_constraints(cli_constraints)
    if len(constraints) > MAX_CONSTRAINTS:
        raise SpecError(f"{len(constraints)} constraints (at most {MAX_CONSTRAINTS})",
                        field="constraints", line=tree.line_of("constraints"))
    for constraint in constraints:
        unknown = sorted(constraint.expr.names - set(var_names))
        if unknown:
            raise constraint.error(f"unknown name {excerpt(unknown[0])} (a constraint reads "
                                   f"vars: {', '.join(var_names) or 'none'})")
    space = SweepSpace(spec, [a for name, a in axes.items() if name not in overrides],
                       tuple(constraints), _invalid_skip(tree), overrides, tree)
    try:
        space.size
    except AxisError as exc:
        raise SpecError(str(exc), field="sweep", line=tree.line_of("sweep")) from None
    return space


def _spec_axes(tree: Any, var_names: list[str]) -> dict[str, Axis]:
    sweep = tree.get("sweep")
    axes: dict[str, Axis] = {}
    if sweep is None:
        return axes
    if not isinstance(sweep, dict) or not sweep:
        raise SpecError("must be a mapping of var name to values", field="sweep",
                        line=tree.line_of("sweep"))
    for name, node in sweep.items():
        if name not in var_names:
            raise SpecError(f"an axis must name a var (vars: {', '.join(var_names) or 'none'})",
                            field=f"sweep.{name}", line=sweep.line_of(name))
        try:
            axes[name] = spec_axis(name, node)
        except AxisError as exc:
            raise spec_error(name, exc, sweep) from None
    return axes


def _spec_constraints(tree: Any) -> list[Constraint]:
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


def _invalid_skip(tree: Any) -> bool:
    value = tree.get("sweep_invalid", "error")
    if value not in SWEEP_INVALID:
        raise SpecError(f"must be {' or '.join(SWEEP_INVALID)}, got {excerpt(value)}",
                        field="sweep_invalid", line=tree.line_of("sweep_invalid"))
    return value == "skip"
