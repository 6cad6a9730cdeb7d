"""A spec's sweep space: `sweep:` (its axes, with `--axis` and `--set`),
`constraints:` (with `--constraint`) and `sweep_invalid:`, read from the
spec's YAML with their lines (SPEC sections 3 and 5) into the points to run.

This is the one place that knows which points of a sweep run: `launch`
runs them (runs/expand.py) and `tune` searches them.

    space = sweep_space("mm.yaml", overrides, cli_axes, ["BX * BY <= 1024"])
    space.size                  # points before constraints, counted, never built
    for p in space.points():    # SpacePoint: p.values, p.overrides, p.runnable,
        ...                     #   p.failed (a Constraint), p.skip_reason
    space.check(values)         # the first Constraint `values` fails, or None
    space.invalid_skip          # `sweep_invalid: skip`: invalid points leave the exit code
    space.nothing_runs(points)  # the error of a space whose every point is skipped

A constraint (constraints.py) reads vars only; any other name is the spec's
error (exit 2, naming its line). A point is evaluated on its own values, and
the spec's vars are resolved there (names.py) only when a constraint reads
one the point does not set. An invalid point is one whose build or load hits
a resource limit of the kernel: errors.ResourceLimitError, `invalid_reason`.
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import CubinrunError, SpecError, UsageError, excerpt, one_line, shorten
from ..limits import MAX_CONSTRAINTS
from .axes import (Axis, AxisError, Value, check_point_count, iter_points, override_text,
                   spec_axis, spec_error)
from .constraints import Constraint, parse_cli_constraints, spec_constraints
from .expr import parse_expr

SWEEP_INVALID = ("error", "skip")
# the keys that sit beside `sweep:`: one written inside it is not an axis
_BESIDE_SWEEP = ("constraints", "sweep_invalid")


class SweptOverrides(dict):
    """Overrides of one sweep point: --set's and the point's values (`swept`
    names the latter), so that a message calls a bad value what the user
    wrote, a sweep's value or --set's."""

    def __init__(self, values: Mapping[str, str], swept: Sequence[str]):
        super().__init__(values)
        self.swept = frozenset(swept)


def point_overrides(overrides: Mapping[str, str], values: Mapping[str, Value]) -> dict[str, str]:
    """--set and a point's values, as the spec loader takes them (naming the
    point's, so that its messages call them swept, not --set)."""
    return SweptOverrides({**overrides, **{k: override_text(v) for k, v in values.items()}},
                          swept=values)


@dataclass(frozen=True, slots=True)         # one per point: 100 000 of them in a big sweep
class SpacePoint:
    values: dict[str, Value]
    failed: Constraint | None = None        # the first constraint it fails
    skip_reason: str | None = None          # that constraint, with the --set values it read
    pinned: Mapping[str, str] | None = None     # --set: the space's, shared by every point

    @property
    def runnable(self) -> bool:
        return self.failed is None

    @property
    def overrides(self) -> dict[str, str]:
        """What the spec is loaded with at this point: --set and the point's values."""
        return point_overrides(self.pinned or {}, self.values)


@dataclass
class SweepSpace:
    spec: str
    axes: list[Axis]
    constraints: tuple[Constraint, ...]
    invalid_skip: bool
    overrides: dict[str, str]               # --set: every point has them too
    tree: Any = None
    _reasons: dict = field(default_factory=dict, repr=False)   # skip_reason's, a constraint each

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
            failed = self.check(values)
            yield SpacePoint(values, failed, self.skip_reason(failed) if failed else None,
                             self.overrides)

    def skip_reason(self, constraint: Constraint) -> str:
        """The constraint as a skipped point gives it: with the --set values it
        reads, itself or through the vars it names, since they, not the point,
        may be why (`TILE % ROWS == 0 (--set ROWS=64)`). Made once a constraint."""
        if constraint not in self._reasons:
            pins = [f"{name}={self.overrides[name]}"
                    for name in self._reads_through_vars(constraint) if name in self.overrides]
            self._reasons[constraint] = constraint.text + (f" (--set {', '.join(pins)})"
                                                           if pins else "")
        return self._reasons[constraint]

    def _reads_through_vars(self, constraint: Constraint) -> list[str]:
        """The vars the constraint reads, and those their definitions read, sorted."""
        definitions = self.tree.get("vars") if isinstance(self.tree, dict) else None
        seen: set[str] = set()
        todo = list(constraint.expr.names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in self.overrides or not isinstance(definitions, dict) \
                    or name not in definitions:
                continue                    # pinned, or not a var: its definition is not read
            try:
                todo += parse_expr(definitions[name]).names
            except SpecError:
                continue                    # the loader names that mistake
        return sorted(seen)

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
            from .names import var_values
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

    def nothing_runs(self, points: Sequence[SpacePoint]) -> CubinrunError | None:
        """The error of a space whose every point fails a constraint (a CI job
        that ran nothing must not pass: exit 2); None when a point runs. It names
        the constraint (its field and line, or the flag) and the --set values
        the constraints read."""
        if not points or any(p.runnable for p in points):
            return None
        counts = Counter(p.skip_reason for p in points)
        why = shorten(one_line("; ".join(f"{reason}: {n} point{'s' if n > 1 else ''}"
                                         for reason, n in counts.items())), 300)
        message = f"nothing runs: every point of the sweep fails a constraint ({why})"
        failed = list(dict.fromkeys(p.failed for p in points))
        if all(c.line is None and c.where.startswith("--") for c in failed):
            shown = ", ".join(excerpt(c.text) for c in failed)
            return UsageError(f"{self.spec}: --constraint {shown}: {message}")
        if len(failed) == 1:
            return failed[0].error(message).located(file=self.spec)
        return SpecError(message, field="constraints", file=self.spec,
                         line=_line_of(self.tree, "constraints"))


def sweep_space(spec: str | Path, overrides: Mapping[str, str] | None = None,
                cli_axes: Sequence[Axis] = (), cli_constraints: Sequence[str] = ()) -> SweepSpace:
    """The space of one spec. SpecError for the spec's own mistakes (its sweep,
    constraints, sweep_invalid; located by the caller with its file);
    UsageError for a --constraint that does not parse."""
    from .yamlload import load_yaml_file
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
    constraints = spec_constraints(tree) + parse_cli_constraints(cli_constraints)
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


def one_point(spec: str | Path, overrides: Mapping[str, str]) -> dict[str, str]:
    """The overrides (--set and the swept values) of the spec's one point, for
    commands that run one launch (profile, repro): a sweep of several points,
    or a point a constraint skips, is a usage error asking for --set."""
    spec = str(spec)
    try:
        space = sweep_space(spec, overrides)
        points = list(space.points())
    except AxisError as exc:
        raise SpecError(str(exc), file=spec) from None
    except SpecError as exc:
        raise exc.located(file=spec)
    if len(points) > 1:
        example = " ".join(f"--set {name}={override_text(value)}"
                           for name, value in points[0].values.items())
        raise UsageError(f"{spec}: its sweep has {len(points)} points and this command runs "
                         f"one: pick it with --set (e.g. {example})")
    point = points[0]
    if not point.runnable:
        raise UsageError(f"{spec}: the point fails the constraint {point.skip_reason}: "
                         f"pick another with --set")
    return dict(point.overrides)


def _spec_axes(tree: Any, var_names: list[str]) -> dict[str, Axis]:
    sweep = tree.get("sweep")
    axes: dict[str, Axis] = {}
    if sweep is None:
        return axes
    if not isinstance(sweep, dict) or not sweep:
        raise SpecError("must be a mapping of var name to values", field="sweep",
                        line=tree.line_of("sweep"))
    for name, node in sweep.items():
        if name in _BESIDE_SWEEP and name not in var_names:
            raise SpecError(f"`{name}:` is a top-level key, not an axis: write it beside "
                            f"`sweep:`, not inside it", field=f"sweep.{name}",
                            line=sweep.line_of(name))
        if name not in var_names:
            raise SpecError(f"an axis must name a var (vars: {', '.join(var_names) or 'none'})",
                            field=f"sweep.{name}", line=sweep.line_of(name))
        try:
            axes[name] = spec_axis(name, node)
        except AxisError as exc:
            raise spec_error(name, exc, sweep) from None
    return axes


def _invalid_skip(tree: Any) -> bool:
    value = tree.get("sweep_invalid", "error")
    if value not in SWEEP_INVALID:
        raise SpecError(f"must be {' or '.join(SWEEP_INVALID)}, got {excerpt(value)}",
                        field="sweep_invalid", line=tree.line_of("sweep_invalid"))
    return value == "skip"


def _line_of(tree: Any, key: str) -> int | None:
    return tree.line_of(key) if hasattr(tree, "line_of") else None
