"""YAML loading that remembers where each key was and refuses duplicate keys.

PyYAML's SafeLoader silently keeps the last of two equal keys; a spec with
`n: 1` twice is almost certainly a mistake, so it is an error here. Mappings
and lists come back as `LocatedDict` / `LocatedList`, plain dict and list
subclasses that also record the 1-based line of each key or item, so errors
can point at the line.

Plain scalars are typed by the YAML 1.2 core schema, as every current YAML
tool reads them, not by PyYAML's YAML 1.1 rules: `1e-6` and `1e3` are floats,
`yes`, `on` and `1:30` are strings (1.1: true, true and 90), `0o17` and `0x1f`
are integers and `.inf` / `.nan` floats. `012` is refused: 1.1 reads it as
octal 10, 1.2 as 12, and a spec must not mean one thing to cubinrun and
another to the tool that wrote it. PyYAML's parser (and its line numbers) is
kept; only the table that types plain scalars is replaced, so start-up pays
for no other library. `<<` merge keys still work.

The document is bounded before anything walks it (limits.py): its size on
disk, its nesting, its size once aliases are expanded (a "billion laughs"
document is refused, not expanded) and the digits of its integers.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

from ..errors import SpecError, excerpt, shorten
from ..limits import MAX_INT_DIGITS, MAX_SPEC_BYTES, MAX_YAML_DEPTH, MAX_YAML_VALUES


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


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"

# The YAML 1.2 core schema's plain scalars (spec 1.2.2, 10.3.2), in PyYAML's
# form: (tag, pattern, the first characters it can start with). An int is
# tried before a float. A decimal with a leading zero matches the int pattern
# so that its constructor can refuse it.
_CORE_SCHEMA = (
    ("tag:yaml.org,2002:null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    (_INT, r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    (_FLOAT, r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
             r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", "-+.0123456789"),
    ("tag:yaml.org,2002:merge", r"<<", "<"),
)
_DECIMAL = re.compile(r"[-+]?[0-9]+")
_OCTAL_OR_HEX = re.compile(r"0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT_FORMS = re.compile(_CORE_SCHEMA[3][1])
_BOOLS = {"true": True, "True": True, "TRUE": True,
          "false": False, "False": False, "FALSE": False}


def _make_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        depth = 0
        yaml_implicit_resolvers: dict = {}

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
        return _core_int(node.value, node.start_mark.line + 1)

    def construct_float(loader, node):
        return _core_float(node.value, node.start_mark.line + 1)

    def construct_bool(loader, node):
        if node.value not in _BOOLS:            # `!!bool yes`: 1.2 has no such boolean
            raise SpecError(f"{excerpt(node.value)} is not a YAML 1.2 boolean (true or false)",
                            line=node.start_mark.line + 1)
        return _BOOLS[node.value]

    def construct_sequence(loader, node):
        items = LocatedList()
        items.line = node.start_mark.line + 1
        for child, text in _rejoin_split_calls(node.value):
            items.append(text if text is not None else loader.construct_object(child, deep=True))
            items.lines.append(child.start_mark.line + 1)
        return items

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, construct_sequence)
    Loader.add_constructor(_INT, construct_int)
    Loader.add_constructor(_FLOAT, construct_float)
    Loader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    for tag, pattern, first in _CORE_SCHEMA:
        Loader.add_implicit_resolver(tag, re.compile(f"^(?:{pattern})$"), list(first))
    return Loader


def _core_int(text: str, line: int) -> int:
    """A YAML 1.2 integer: decimal, 0o octal or 0x hex, at most MAX_INT_DIGITS digits."""
    digits = sum(c.isalnum() for c in text) - (2 if text[:2] in ("0o", "0x") else 0)
    if digits > MAX_INT_DIGITS:
        raise SpecError(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})", line=line)
    if _OCTAL_OR_HEX.fullmatch(text):
        return int(text[2:], 8 if text[1] == "o" else 16)
    if not _DECIMAL.fullmatch(text):            # `!!int 1:30`, `!!int 0b1`
        raise SpecError(f"{excerpt(text)} is not a YAML 1.2 integer", line=line)
    unsigned = text.lstrip("+-")
    if len(unsigned) > 1 and unsigned[0] == "0":
        decimal = text[:len(text) - len(unsigned)] + (unsigned.lstrip("0") or "0")
        is_octal = set(unsigned) <= set("01234567")
        octal = f", 0o{int(unsigned, 8):o} for octal" if is_octal and unsigned == text \
            and int(unsigned) else ""
        raise SpecError(f"{text} has a leading zero, which YAML 1.1 reads as "
                        f"{'octal' if is_octal else 'a string'} and YAML 1.2 as decimal: write "
                        f"{decimal} for decimal{octal}, or \"{text}\" for a string", line=line)
    return int(text)


def _core_float(text: str, line: int) -> float:
    """A YAML 1.2 float (`!!float 3` too); `.inf`, `-.inf` and `.nan` included."""
    if not _FLOAT_FORMS.fullmatch(text):
        raise SpecError(f"{excerpt(text)} is not a YAML 1.2 float", line=line)
    lowered = text.lower()
    if lowered.endswith((".inf", ".nan")):
        return float(lowered.replace(".", ""))
    return float(text)


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
        if (missing := _missing_colon(exc, text)) is not None:
            line, problem = missing
        raise SpecError(f"invalid YAML: {_advice(problem)}", file=file, line=line) from None
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
    """The file's tree. The file is read every time, but the same bytes parse
    once per process: a sweep loads its spec once per point, and parsing was
    most of a dry run's time per point (3 of its 5 ms). Trees are never
    modified by their readers, so sharing one is safe."""
    from ..files import read_bounded
    try:
        data = read_bounded(path, MAX_SPEC_BYTES, "spec")
    except SpecError as exc:         # the message starts with the path: say it once
        raise SpecError(exc.message.removeprefix(f"{path}: "), file=str(path)) from None
    return _parsed(data, str(path))


@functools.lru_cache(maxsize=8)           # at most 8 specs of MAX_SPEC_BYTES held
def _parsed(data: bytes, file: str):
    from ..files import decode_utf8
    return load_yaml_text(decode_utf8(data, file, "spec"), file=file)


def _advice(problem: str) -> str:
    """PyYAML's words, with the fix when the slip is a common one."""
    import re
    if alias := re.fullmatch(r"found undefined alias '(.*)'", problem):
        name = alias.group(1)
        return (f"*{name} reads as a YAML alias; a pointer type must be quoted: "
                f'"*{name}"')
    return problem


def _missing_colon(exc, text: str) -> tuple[int, str] | None:
    """A key written without its colon (`N 1024`): PyYAML notices only on the
    next line (its mark is one line late). The line and the fix, or None."""
    if exc.problem not in ("could not find expected ':'", "mapping values are not allowed here"):
        return None
    if exc.problem == "could not find expected ':'" and exc.context_mark is not None:
        number = exc.context_mark.line          # where the key without a colon began
    elif exc.problem_mark is not None:
        number = exc.problem_mark.line - 1      # the line before the one PyYAML names
    else:
        return None
    lines = text.splitlines()
    while 0 <= number < len(lines) and not lines[number].split("#")[0].strip():
        number -= 1                             # blank and comment lines between
    if not 0 <= number < len(lines):
        return None
    words = lines[number].split("#")[0].strip()
    if ":" in words:
        return None                             # a colon is there: another problem
    key = words.split()[0] if words.split() else words
    return number + 1, f"no ':' after {excerpt(key)} (write `{shorten(key)}: ...`)"
