"""From the command line to a list of runs: spec files and folders (a folder
means its `*.yaml`, sorted), each spec's `sweep:` with `--axis` added or
replacing axes of the same name, and `--set`.

A problem with the command line itself (a path that is not there, a bad
`--axis` or `--set`) ends the command before anything runs (exit 2). A
problem with one spec (its YAML, its sweep) becomes that spec's run, failed
with its error, so the other specs still run and the report shows it.

`--set` on a swept var pins it: the axis collapses to that one value. An axis
must name a var of the spec, as `--set` must.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import CubinrunError, SpecError, UsageError
from .axes import Axis, AxisError, Number, cli_axis, override_text, points, spec_axis, spec_error


@dataclass(frozen=True)
class RunTask:
    """One run: a spec file at one point of its sweep."""
    index: int
    spec: str                                   # the path as given or found in a folder
    point: dict[str, Number] = field(default_factory=dict)     # the swept vars
    overrides: dict[str, str] = field(default_factory=dict)    # --set and the point
    pow2: tuple[str, ...] = ()                  # swept vars whose axis is pow2
    error: CubinrunError | None = None          # found while expanding: the run's outcome

    @property
    def label(self) -> str:
        return self.spec + (f" [{point_text(self.point)}]" if self.point else "")


def point_text(point: dict[str, Number]) -> str:
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
           axis_texts: Sequence[str] = ()) -> list[RunTask]:
    """The runs of a command line, in order: specs in order, each spec's points in
    order (the first axis outermost)."""
    cli_axes = [cli_axis(text) for text in axis_texts]
    names = [a.name for a in cli_axes]
    if len(set(names)) != len(names):
        raise UsageError(f"--axis {next(n for n in names if names.count(n) > 1)} is given twice")
    for axis in cli_axes:
        if axis.name in overrides:
            raise UsageError(f"{axis.name} is both swept (--axis) and set (--set)")
    tasks: list[RunTask] = []
    for spec in spec_files(paths):
        try:
            axes = spec_axes(spec, cli_axes, overrides)
            spec_points = points(axes)
        except AxisError as exc:
            tasks.append(RunTask(len(tasks), spec, overrides=dict(overrides),
                                 error=SpecError(str(exc), file=spec)))
            continue
        except CubinrunError as exc:
            if isinstance(exc, SpecError):
                exc.located(file=spec)
            tasks.append(RunTask(len(tasks), spec, overrides=dict(overrides), error=exc))
            continue
        pow2 = tuple(a.name for a in axes if a.pow2)
        for point in spec_points:
            merged = {**overrides, **{k: override_text(v) for k, v in point.items()}}
            tasks.append(RunTask(len(tasks), spec, point, merged, pow2))
    return tasks


def spec_axes(spec: str, cli_axes: list[Axis], overrides: dict[str, str]) -> list[Axis]:
    """The spec's sweep, with the command line's axes replacing or added, and
    --set pinning swept vars. Raises SpecError for the spec's own mistakes."""
    from ..specfile.yamlload import load_yaml_file
    tree = load_yaml_file(Path(spec))
    if not isinstance(tree, dict):
        return []                               # the loader says what is wrong
    var_node = tree.get("vars")
    var_names = [str(v) for v in var_node] if isinstance(var_node, dict) else []
    sweep = tree.get("sweep")
    axes: dict[str, Axis] = {}
    if sweep is not None:
        if not isinstance(sweep, dict) or not sweep:
            raise SpecError("must be a mapping of var name to values", field="sweep",
                            line=tree.line_of("sweep"))
        for name, node in sweep.items():
            if name not in var_names:
                raise SpecError(f"an axis must name a var (vars: "
                                f"{', '.join(var_names) or 'none'})",
                                field=f"sweep.{name}", line=sweep.line_of(name))
            try:
                axes[name] = spec_axis(name, node)
            except AxisError as exc:
                raise spec_error(name, exc, sweep) from None
    for axis in cli_axes:
        if axis.name not in var_names:
            raise SpecError(f"--axis {axis.name}: no such var (vars: "
                            f"{', '.join(var_names) or 'none'})")
        axes[axis.name] = axis
    return [a for name, a in axes.items() if name not in overrides]
