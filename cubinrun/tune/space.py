"""The search space of a tune: a spec's sweep axes (with `--axis` and `--set`)
under its constraints, and how a point is spelled for Optuna.

Each axis is one Optuna parameter. A numeric axis is an integer index into its
values sorted ascending (IntDistribution), so every strategy sees its order
and CMA-ES and the GP, which need numbers, can search it; a string axis is
categorical. `valid` holds the points the constraints leave, in sweep order:
strategies only ever get one of them measured.

The axes and the constraints are those of `launch` (specfile/sweep.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import SpecError, UsageError
from ..results.reader import point_key
from ..specfile.axes import Axis, AxisError, cli_axis
from ..specfile.sweep import point_overrides

Point = dict[str, Any]


@dataclass
class TuneSpace:
    spec: str
    overrides: dict[str, str]                   # --set: every point has them too
    axes: list[Axis]
    valid: list[Point]                          # in sweep order
    skipped: list[tuple[Point, str]]            # fails a constraint: (point, the constraint)

    @property
    def size(self) -> int:
        return len(self.valid) + len(self.skipped)

    def ordered(self, axis: Axis) -> list:
        """An axis's values in the order its parameter indexes them."""
        return sorted(axis.values) if _numeric(axis) else list(axis.values)

    def distributions(self) -> dict:
        from optuna.distributions import CategoricalDistribution, IntDistribution
        out = {}
        for axis in self.axes:
            if _numeric(axis):
                out[axis.name] = IntDistribution(0, len(axis.values) - 1)
            else:
                out[axis.name] = CategoricalDistribution(list(axis.values))
        return out

    def params(self, point: Point) -> dict:
        """A point as Optuna parameters."""
        return {a.name: (self.ordered(a).index(point[a.name]) if _numeric(a) else point[a.name])
                for a in self.axes}

    def point(self, params: dict) -> Point:
        """Optuna parameters as a point (axes in the spec's order)."""
        return {a.name: (self.ordered(a)[params[a.name]] if _numeric(a) else params[a.name])
                for a in self.axes}

    def overrides_of(self, point: Point) -> dict[str, str]:
        return point_overrides(self.overrides, point)

    def is_valid(self, point: Point) -> bool:
        return key(point) in self._valid_keys

    def __post_init__(self) -> None:
        self._valid_keys = {key(p) for p in self.valid}


def key(point: Point) -> str:
    """A point as one string: how storage and replay files find it."""
    return point_key(point)


def _numeric(axis: Axis) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in axis.values)


def load_space(spec: str, overrides: dict[str, str], axis_texts: Sequence[str] = (),
               constraints: Sequence[str] = ()) -> TuneSpace:
    """The space of `spec` (specfile/sweep.py: its axes with `--axis` and `--set`, its
    constraints and `--constraint`); a spec with no axis left to search is a
    usage error."""
    from ..specfile.sweep import sweep_space
    cli_axes = [cli_axis(text) for text in axis_texts]
    try:
        space = sweep_space(spec, overrides, cli_axes, constraints)
        checked = list(space.points())
    except AxisError as exc:
        raise SpecError(str(exc), file=spec) from None
    except SpecError as exc:
        raise exc.located(file=spec) from None
    if not space.axes:
        raise UsageError(f"{spec}: nothing to tune: the spec has no sweep axes "
                         "(add `sweep:` or --axis)")
    return TuneSpace(spec, dict(overrides), list(space.axes),
                     [p.values for p in checked if p.runnable],
                     [(p.values, p.failed.text) for p in checked if not p.runnable])
