"""The YAML line of a spec field, so that every spec error can name it.

Errors found while the spec is read know their node and line. Errors found
later (against the binary, in the host data, in a check) know only the field
path they concern, such as `args.x.init.fill` or `grid[0]`: the line is looked
up from that path in the YAML tree, down to the deepest part the spec wrote.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..errors import SpecError

_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def line_of_field(tree: Any, field: str | None) -> int | None:
    """The line of `field` (or of its deepest written parent); None if none is written."""
    if not field or not isinstance(tree, dict):
        return None
    node, line = tree, None
    for name, index in _PART.findall(field):
        key: Any = int(index) if index else name
        if isinstance(node, dict) and not index and key in node:
            line = node.line_of(key) if hasattr(node, "line_of") else line
        elif isinstance(node, list) and index and key < len(node):
            line = node.line_of(key) if hasattr(node, "line_of") else line
        else:
            break
        node = node[key]
    return line


def locate(error: SpecError, spec_path: str | Path, tree: Any = None) -> SpecError:
    """`error` with the spec's file and, when it has none, the line of its field.

    Without `tree` the spec is read again: this runs once, on the way out."""
    if error.line is None and error.field and (error.file in (None, str(spec_path))):
        if tree is None:
            from .yamlload import load_yaml_file
            try:
                tree = load_yaml_file(Path(spec_path))
            except SpecError:
                tree = None
        error.located(line=line_of_field(tree, error.field))
    return error.located(file=str(spec_path))


@contextmanager
def located(spec_path: str | Path) -> Iterator[None]:
    """Where a spec's run starts: any SpecError raised inside, however deep (the
    plan, the binary, the data, the device), leaves naming the spec's file and
    its field's line, so no caller has to remember to."""
    try:
        yield
    except SpecError as error:
        raise locate(error, spec_path) from None
