"""From the command line to a list of runs: spec files and folders (a folder
means its `*.yaml`, sorted), each spec's `sweep:` with `--axis` added or
replacing axes of the same name, and `--set`.

A problem with the command line itself (a path that is not there, a bad
`--axis` or `--set`) ends the command before anything runs (exit 2). A
problem with one spec (its YAML, its sweep) becomes that spec's run, failed
with its error, so the other specs still run and the report shows it.

`--set` on a swept var pins it: the axis collapses to that one value. An axis
must name a var of the spec, as `--set` must. The spec's sweep space
(specfile/sweep.py) says which points there are and which a constraint (the
spec's or `--constraint`) skips; a spec whose every point is skipped fails
(exit 2) on its last point, which keeps its row as skipped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import CubinrunError, SpecError, UsageError
from ..specfile.axes import AxisError, Value, cli_axis
from ..specfile.constraints import parse_cli_constraints
from ..specfile.sweep import sweep_space


@dataclass(frozen=True)
class RunTask:
    """One run: a spec file at one point of its sweep."""
    index: int
    spec: str                                   # the path as given or found in a folder
    point: dict[str, Value] = field(default_factory=dict)      # the swept vars
    overrides: dict[str, str] = field(default_factory=dict)    # --set and the point
    pow2: tuple[str, ...] = ()                  # swept vars whose axis is pow2
    error: CubinrunError | None = None          # found while expanding: the run's outcome
    skipped: str | None = None                  # the constraint the point fails: not run
                                                # (with `error` too: every point is skipped)
    invalid_skip: bool = False                  # `sweep_invalid: skip`
    timing_only: bool = False                   # re-timed (a tune's last step): checked before

    @property
    def label(self) -> str:
        return self.spec + (f" [{point_text(self.point)}]" if self.point else "")

    @property
    def runnable(self) -> bool:
        return self.error is None and self.skipped is None

    @property
    def in_sweep(self) -> bool:
        return bool(self.point)


def point_text(point: dict[str, Value]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


def spec_files(paths: Sequence[str]) -> list[str]:
    """Every spec, in order: files as given, folders as their sorted *.yaml."""
    files: list[str] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted(path.glob("*.yaml"))
            if not found:
                raise UsageError(f"{text}: a folder with no *.yaml specs")
            files += [str(p) for p in found]
        elif path.exists():
            files.append(text)
        else:
            raise UsageError(f"{text}: no such file")
    return files


def expand(paths: Sequence[str], overrides: dict[str, str],
           axis_texts: Sequence[str] = (), constraint_texts: Sequence[str] = ()) -> list[RunTask]:
    """The runs of a command line, in order: specs in order, each spec's points in
    order (the first axis outermost); a point that fails a constraint is a
    skipped task."""
    cli_axes = [cli_axis(text) for text in axis_texts]
    parse_cli_constraints(constraint_texts)     # a bad one ends the command (exit 2)
    names = [a.name for a in cli_axes]
    if len(set(names)) != len(names):
        raise UsageError(f"--axis {next(n for n in names if names.count(n) > 1)} is given twice")
    for axis in cli_axes:
        if axis.name in overrides:
            raise UsageError(f"{axis.name} is both swept (--axis) and set (--set)")
    tasks: list[RunTask] = []
    for spec in spec_files(paths):
        try:
            space = sweep_space(spec, overrides, cli_axes, constraint_texts)
            spec_points = list(space.points())
        except AxisError as exc:
            tasks.append(RunTask(len(tasks), spec, overrides=dict(overrides),
                                 error=SpecError(str(exc), file=spec)))
            continue
        except CubinrunError as exc:
            if isinstance(exc, SpecError):
                exc.located(file=spec)
            tasks.append(RunTask(len(tasks), spec, overrides=dict(overrides), error=exc))
            continue
        nothing_runs = space.nothing_runs(spec_points)
        for position, point in enumerate(spec_points, 1):
            tasks.append(RunTask(len(tasks), spec, point.values, point.overrides, space.pow2,
                                 skipped=point.skip_reason, invalid_skip=space.invalid_skip,
                                 error=nothing_runs if position == len(spec_points) else None))
    return tasks
