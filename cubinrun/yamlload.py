"""YAML loading that remembers where each key was and refuses duplicate keys.

PyYAML's SafeLoader silently keeps the last of two equal keys; a spec with
`n: 1` twice is almost certainly a mistake, so it is an error here. Mappings
and lists come back as `LocatedDict` / `LocatedList`, plain dict and list
subclasses that also record the 1-based line of each key or item, so errors
can point at the line.
"""
from __future__ import annotations

from pathlib import Path

from .errors import SpecError


class LocatedDict(dict):
    line: int | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lines: dict = {}

    def line_of(self, key) -> int | None:
        return self.lines.get(key, self.line)


class LocatedList(list):
    line: int | None = None

    def __init__(self, *args):
        super().__init__(*args)
        self.lines: list[int | None] = []

    def line_of(self, index: int) -> int | None:
        return self.lines[index] if index < len(self.lines) else self.line


def _make_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def construct_mapping(loader, node):
        loader.flatten_mapping(node)            # honour `<<` merge keys
        mapping = LocatedDict()
        mapping.line = node.start_mark.line + 1
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                duplicate = key in mapping
            except TypeError:
                raise SpecError(f"unhashable mapping key {key!r}", line=line) from None
            if duplicate:
                raise SpecError(f"duplicate key {key!r} (first on line {mapping.lines[key]})",
                                line=line)
            mapping[key] = loader.construct_object(value_node, deep=True)
            mapping.lines[key] = line
        return mapping

    def construct_sequence(loader, node):
        items = LocatedList()
        items.line = node.start_mark.line + 1
        for child, text in _rejoin_split_calls(node.value):
            items.append(text if text is not None else loader.construct_object(child, deep=True))
            items.lines.append(child.start_mark.line + 1)
        return items

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence)
    return Loader


def _rejoin_split_calls(children):
    """Undo YAML splitting `[cdiv(N, BLOCK)]` at the comma inside the call.

    In a flow sequence YAML reads `cdiv(N` and `BLOCK)` as two plain scalars.
    A plain scalar with more `(` than `)` cannot be a complete expression, so
    it is joined with the following items until the parentheses balance.
    Yields (first child node, joined text or None when nothing was joined).
    """
    import yaml
    pending, parts, depth = None, [], 0
    for child in children:
        plain = isinstance(child, yaml.ScalarNode) and child.style is None
        if pending is None:
            if plain and child.value.count("(") > child.value.count(")"):
                pending, parts = child, [child.value]
                depth = child.value.count("(") - child.value.count(")")
            else:
                yield child, None
            continue
        parts.append(child.value if plain else "")
        depth += child.value.count("(") - child.value.count(")") if plain else 0
        if depth <= 0:
            yield pending, ", ".join(parts)
            pending = None
    if pending is not None:
        yield pending, ", ".join(parts)         # still unbalanced: the parser will say so


def load_yaml_text(text: str, file: str | None = None):
    import yaml
    try:
        return yaml.load(text, Loader=_make_loader())
    except SpecError as exc:
        raise exc.located(file=file) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(f"invalid YAML: {problem}", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise SpecError(f"invalid YAML: {exc}", file=file) from None


def load_yaml_file(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise SpecError("is a directory, not a spec file", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read: {exc}", file=str(path)) from None
    return load_yaml_text(text, file=str(path))
