"""What a tune writes: the best point as `--set` arguments, the spec with the
best values pinned (`-o BEST.yaml`) and the plot of the objective against
evaluations (the table and the JSON document are cli/tune.py's)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..specfile.axes import override_text
from .evaluate import Evaluation, Objective


def set_arguments(point: dict) -> str:
    """`--set K=V ...` as a shell takes it: a string value is a quoted literal
    (`--set K="'transposeNaive'"`)."""
    return " ".join(f"--set {k}={_shell(override_text(v))}" for k, v in point.items())


def _shell(text: str) -> str:
    import shlex
    if text == shlex.quote(text):
        return text
    if not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)


def value_text(value: float | None, objective: Objective) -> str:
    if value is None:
        return "-"
    if objective.name == "time":
        return f"{value / 1000:.4g} ms" if value >= 1000 else f"{value:.4g} us"
    return f"{value:.4g} {objective.unit}"


# -- the pinned spec --

_SCALAR_LINE = r"^(\s*){name}(\s*:\s*)([^#\n]*?)(\s+#.*)?$"


def pinned_spec(spec: str, values: dict, note: str) -> str:
    """The spec's text with `values` set as its vars and its sweep and constraints
    removed; comments and layout kept. Vars written in flow style (`vars: {A: 1}`)
    make it dump the spec anew (comments lost)."""
    from ..specfile.yamlload import load_yaml_text
    text = Path(spec).read_text(encoding="utf-8")
    tree = load_yaml_text(text, spec)
    lines = text.splitlines()
    edited = _pin_vars(lines, tree, values)
    if edited is None:
        return _dumped(tree, values, note)
    drop: set[int] = set()
    for section in ("sweep", "constraints", "sweep_invalid"):
        if section in tree:
            drop |= _block(edited, tree.line_of(section))
    out = [f"# {note}"] + [line for number, line in enumerate(edited, 1) if number not in drop]
    result = "\n".join(out) + "\n"
    check = load_yaml_text(result, spec)
    wanted = {k: override_text(v) if isinstance(v, str) else v for k, v in values.items()}
    if any(check.get("vars", {}).get(k) != v for k, v in wanted.items()) or "sweep" in check:
        return _dumped(tree, values, note)
    return result


def _pin_vars(lines: list[str], tree, values: dict) -> list[str] | None:
    variables = tree.get("vars")
    if not isinstance(variables, dict):
        return None
    lines = list(lines)
    for name, value in values.items():
        line = variables.line_of(name) if name in variables else None
        if line is None or not 1 <= line <= len(lines):
            return None
        match = re.match(_SCALAR_LINE.format(name=re.escape(name)), lines[line - 1])
        if match is None or not match.group(3).strip() or match.group(3).strip()[0] in "{[|>":
            return None
        lines[line - 1] = (f"{match.group(1)}{name}{match.group(2)}{_yaml_scalar(value)}"
                           f"{match.group(4) or ''}")
    return lines


def _block(lines: list[str], start: int | None) -> set[int]:
    """The line numbers of a top-level key's block: its line up to the next top-level line."""
    if start is None:
        return set()
    out = {start}
    for number in range(start + 1, len(lines) + 1):
        line = lines[number - 1]
        if line and not line[0].isspace() and not line.startswith("#"):
            break
        out.add(number)
    while len(out) > 1 and not lines[max(out) - 1].strip():     # keep the blank line after
        out.discard(max(out))
    return out


def _yaml_scalar(value: Any) -> str:
    """A var's value in YAML: a string as its quoted literal (`"'name'"`)."""
    return json.dumps(override_text(value)) if isinstance(value, str) else override_text(value)


def _dumped(tree, values: dict, note: str) -> str:
    import yaml
    plain = json.loads(json.dumps(tree))
    plain.setdefault("vars", {}).update(
        {k: override_text(v) if isinstance(v, str) else v for k, v in values.items()})
    for section in ("sweep", "constraints", "sweep_invalid"):
        plain.pop(section, None)
    return f"# {note}\n" + yaml.safe_dump(plain, sort_keys=False)


# -- the pinned spec in another folder --

_KERNEL_PATHS = ("cubin", "source", "ptx", "triton")


def relocated(text: str, spec: str, destination: str) -> tuple[str, list[str]]:
    """A pinned spec's `text` for `destination`'s folder: each path the spec
    names relative to its own folder (kernel files, includes, `.npy` inputs,
    saves and references) rewritten to name the same file from there, with
    comments and layout kept (the spec is dumped anew where a path cannot be
    found on its line). Also a note for each path that cannot move: a
    `reference:` must lie in its spec's folder or below."""
    from ..specfile.yamlload import load_yaml_text
    source = Path(spec).resolve().parent
    target = Path(destination).resolve().parent
    if source == target:
        return text, []
    tree = load_yaml_text(text, spec)
    lines, notes, moves = text.splitlines(), [], []
    for keys, value, line in _spec_paths(tree):
        file, colon, function = value.rpartition(":") if keys[-1] == "reference" \
            else (value, "", "")
        if Path(file).is_absolute():
            continue
        moved = _relative(source / file, target)
        if keys[-1] == "reference" and (moved is None or moved.startswith("..")):
            notes.append(f"{'.'.join(map(str, keys))}: {value} is left as written: a reference "
                         f"must lie in its spec's folder or below (copy {file} beside "
                         f"{destination})")
            continue
        moves.append((keys, value, line, (moved or str(source / file)) + colon + function))
    plain = json.loads(json.dumps(tree))
    for keys, _, _, new in moves:
        _at(plain, keys[:-1])[keys[-1]] = new
    edited = _moved_lines(lines, moves)
    if edited is not None:
        result = "\n".join(edited) + "\n"
        # read back as the moves meant (a plain path can end a flow mapping early)
        if json.loads(json.dumps(load_yaml_text(result, spec))) == plain:
            return result, notes
    import yaml
    head = lines[0] + "\n" if lines and lines[0].startswith("#") else ""
    return head + yaml.safe_dump(plain, sort_keys=False), notes


def _at(tree, keys: tuple):
    for k in keys:
        tree = tree[k]
    return tree


def _spec_paths(tree):
    """(keys, value, line) of each path in a spec's tree that is relative to it."""
    kernel = tree.get("kernel") if isinstance(tree.get("kernel"), dict) else {}
    for name in _KERNEL_PATHS:
        if isinstance(kernel.get(name), str):
            yield ("kernel", name), kernel[name], kernel.line_of(name)
    include = kernel.get("include")
    if isinstance(include, list):
        for i, folder in enumerate(include):
            if isinstance(folder, str):
                yield ("kernel", "include", i), folder, include.line_of(i)
    for section in ("args", "globals"):
        if isinstance(tree.get(section), dict):
            yield from _buffer_paths(tree[section], (section,))
    check = tree.get("check") if isinstance(tree.get("check"), dict) else {}
    for name, entry in check.items():
        for key in ("file", "reference"):
            if isinstance(entry, dict) and isinstance(entry.get(key), str):
                yield ("check", name, key), entry[key], entry.line_of(key)


def _buffer_paths(mapping: dict, keys: tuple):
    """The `save:` and `init: {file:}` paths of buffers, struct members included."""
    for name, value in mapping.items():
        if not isinstance(value, dict):
            continue
        if isinstance(value.get("save"), str):
            yield (*keys, name, "save"), value["save"], value.line_of("save")
        init = value.get("init")
        if isinstance(init, dict) and isinstance(init.get("file"), str):
            yield (*keys, name, "init", "file"), init["file"], init.line_of("file")
        yield from _buffer_paths(value, (*keys, name))


def _relative(path: Path, folder: Path) -> str | None:
    """`path` as seen from `folder` (None: no relative path, another drive)."""
    import os
    try:
        return Path(os.path.relpath(path, folder)).as_posix()
    except ValueError:
        return None


def _moved_lines(lines: list[str], moves) -> list[str] | None:
    """`lines` with each move's old value replaced on its line (written as
    YAML writes it: plain, single- or double-quoted), or None where one is
    not there exactly once."""
    lines = list(lines)
    for _, old, line, new in moves:
        if line is None or not 1 <= line <= len(lines):
            return None
        for spelling in (f'"{old}"', f"'{old}'", old):
            # the value alone, not part of a longer word or path
            pattern = rf"(?<![\w./'\"-]){re.escape(spelling)}(?![\w./'\"-])"
            if re.search(pattern, lines[line - 1]):
                written = json.dumps(new) if spelling != old else _plain_path(new)
                lines[line - 1], count = re.subn(pattern, lambda _: written, lines[line - 1])
                if count != 1:
                    return None
                break
        else:
            return None
    return lines


def _plain_path(path: str) -> str:
    """A path as a YAML plain scalar where it reads back as itself, else quoted."""
    from ..errors import CubinrunError
    from ..specfile.yamlload import load_yaml_text
    try:
        if load_yaml_text(f"p: {path}\n", "path") == {"p": path}:
            return path
    except CubinrunError:               # not YAML as it stands: quoted
        pass
    return json.dumps(path)


# -- the plot --

def plot(evaluations: list[Evaluation], objective: Objective, path: str, title: str) -> None:
    """Each evaluation's objective (failed ones marked along the bottom) and the
    best so far, against the evaluation's number."""
    from matplotlib.figure import Figure
    figure = Figure(figsize=(8, 4.5))
    axes = figure.add_subplot()
    xs = [n for n, e in enumerate(evaluations, 1) if e.ok]
    ys = [e.value for e in evaluations if e.ok]
    axes.scatter(xs, ys, s=14, label="passed")
    best, line = None, []
    for e in evaluations:
        if e.ok and (best is None or objective.better(e.value, best)):
            best = e.value
        line.append(best)
    axes.step(range(1, len(evaluations) + 1), line, where="post", color="C1",
              label="best so far")
    failed = [n for n, e in enumerate(evaluations, 1) if not e.ok]
    if failed and ys:
        low = min(ys)
        axes.scatter(failed, [low] * len(failed), marker="x", color="red", s=18,
                     label="failed")
    axes.set_xlabel("evaluation")
    axes.set_ylabel(f"{objective.name} ({objective.unit})")
    axes.set_title(title, fontsize=9)
    axes.legend(fontsize=8)
    figure.tight_layout()
    import io
    from ..files import write_output
    image = io.BytesIO()        # rendered first: matplotlib would open the path itself
    figure.savefig(image, format=Path(path).suffix.lower()[1:], dpi=120)
    write_output(path, image.getvalue(), True, "--plot")


def time_spent(evaluations, compile_ahead_s: float) -> dict[str, float]:
    """Where this tune's measured configurations spent their time, in seconds,
    summed: `compile_ahead` (the build pool, on CPU cores beside the GPU),
    `build_and_load` (a run's own build, module load and set-up: its wall time
    less its stages), then the run's stages (pipeline/result.py STAGES: init
    makes the inputs, upload, launch, download, check) and `timing`."""
    spent = {"compile_ahead": compile_ahead_s, "build_and_load": 0.0}
    for evaluation in evaluations:
        stages = evaluation.stages_s or {}
        for name, seconds in stages.items():
            spent[name] = spent.get(name, 0.0) + seconds
        if evaluation.wall_s:
            spent["build_and_load"] += max(0.0, evaluation.wall_s - sum(stages.values()))
    return {name: round(seconds, 3) for name, seconds in spent.items()}
