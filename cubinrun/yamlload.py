"""YAML loading that remembers where each key was and refuses duplicate keys.

PyYAML's SafeLoader silently keeps the last of two equal keys; a spec with
`n: 1` twice is almost certainly a mistake, so it is an error here. Mappings
and lists come back as `LocatedDict` / `LocatedList`, plain dict and list
subclasses that also record the 1-based line of each key or item, so errors
can point at the line.

The document is bounded before anything walks it (limits.py): its size on
disk, its nesting, its size once aliases are expanded (a "billion laughs"
document is refused, not expanded) and the digits of its integers.
"""
from __future__ import annotations

from pathlib import Path

from .errors import SpecError, excerpt
from .limits import MAX_INT_DIGITS, MAX_SPEC_BYTES, MAX_YAML_DEPTH, MAX_YAML_VALUES


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
        depth = 0

        def compose_node(self, parent, index):
            # PyYAML composes recursively: refuse deep nesting before Python's
            # own recursion limit does.
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    line = self.peek_event().start_mark.line + 1
                    raise SpecError(f"nested more than {MAX_YAML_DEPTH} levels deep", line=line)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_document(self, node):
            _check_expanded_size(node)
            return super().construct_document(node)

    def construct_mapping(loader, node):
        loader.flatten_mapping(node)            # honour `<<` merge keys
        mapping = LocatedDict()
        mapping.line = node.start_mark.line + 1
        pairs = _rejoin_split_values(node.value) if node.flow_style else (
            (k, v, None) for k, v in node.value)
        for key_node, value_node, text in pairs:
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                duplicate = key in mapping
            except TypeError:
                raise SpecError(f"unhashable mapping key {excerpt(key)}", line=line) from None
            if duplicate:
                raise SpecError(f"duplicate key {excerpt(key)} (first on line "
                                f"{mapping.lines[key]})", line=line)
            mapping[key] = (text if text is not None
                            else loader.construct_object(value_node, deep=True))
            mapping.lines[key] = line
        return mapping

    def construct_int(loader, node):
        digits = sum(c.isdigit() for c in node.value)
        if digits > MAX_INT_DIGITS:
            raise SpecError(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})",
                            line=node.start_mark.line + 1)
        return yaml.SafeLoader.construct_yaml_int(loader, node)

    def construct_sequence(loader, node):
        items = LocatedList()
        items.line = node.start_mark.line + 1
        for child, text in _rejoin_split_calls(node.value):
            items.append(text if text is not None else loader.construct_object(child, deep=True))
            items.lines.append(child.start_mark.line + 1)
        return items

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence)
    Loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return Loader


def _check_expanded_size(root) -> None:
    """Refuse a document whose values, aliases expanded, exceed MAX_YAML_VALUES.

    Each node's expanded size is computed once (aliases share nodes), without
    recursion, so the check costs as much as the document's text.
    """
    import yaml
    size: dict[int, int] = {}
    active: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        if children_done:
            active.discard(id(node))
            total = 1 + sum(size[id(c)] for c in children)
            if total > MAX_YAML_VALUES:
                raise SpecError(f"more than {MAX_YAML_VALUES} values once its aliases are "
                                "expanded", line=node.start_mark.line + 1)
            size[id(node)] = total
            continue
        active.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in active:
                raise SpecError("an alias refers to the node that contains it",
                                line=child.start_mark.line + 1)
            if id(child) not in size:
                stack.append((child, False))


def _unbalanced(value: str) -> int:
    return value.count("(") - value.count(")")


def _rejoin_split_values(pairs):
    """Undo YAML splitting `{expect: maximum(x, y)}` at the comma in the call.

    In a flow mapping YAML reads `expect: maximum(x` and then `y)` as a key
    with no value. A plain value with more `(` than `)` is joined with the
    following keys that have no value (written `y)`, not `y: ...`) until the
    parentheses balance. Yields (key node, value node, joined text or None).
    """
    import yaml
    pairs = list(pairs)
    i = 0
    while i < len(pairs):
        key, value = pairs[i]
        i += 1
        if not (_plain(value) and _unbalanced(value.value) > 0):
            yield key, value, None
            continue
        parts, depth = [value.value], _unbalanced(value.value)
        while depth > 0 and i < len(pairs):
            k, v = pairs[i]
            no_value = (isinstance(v, yaml.ScalarNode) and v.value == ""
                        and v.start_mark.index == v.end_mark.index)
            if not (_plain(k) and no_value):
                break
            parts.append(k.value)
            depth += _unbalanced(k.value)
            i += 1
        yield key, value, ", ".join(parts) if len(parts) > 1 else None


def _plain(node) -> bool:
    import yaml
    return isinstance(node, yaml.ScalarNode) and node.style is None


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
    except yaml.reader.ReaderError as exc:      # a control character such as NUL
        line = text.count("\n", 0, exc.position) + 1
        what = f"character #x{exc.character:04x}" if isinstance(exc.character, int) else "byte"
        raise SpecError(f"invalid YAML: {what} is not allowed in YAML text",
                        file=file, line=line) from None
    except yaml.YAMLError as exc:
        first = (str(exc).splitlines() or ["?"])[0]
        raise SpecError(f"invalid YAML: {first}", file=file) from None
    except RecursionError:          # a safety net: the bounds above should come first
        raise SpecError("invalid YAML: nested too deeply", file=file) from None


def load_yaml_file(path: Path):
    from .inputs import decode_utf8, read_bounded
    try:
        data = read_bounded(path, MAX_SPEC_BYTES, "spec")
    except SpecError as exc:         # the message starts with the path: say it once
        raise SpecError(exc.message.removeprefix(f"{path}: "), file=str(path)) from None
    return load_yaml_text(decode_utf8(data, str(path), "spec"), file=str(path))
