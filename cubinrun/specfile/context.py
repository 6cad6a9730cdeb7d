"""What the readers of a spec's sections share: the file, its YAML tree, the
vars and scalar args (`names`, once known), and the helpers that read a field
and name its file, path and line in any error. The loader's builder is one;
args.py and triton_args.py read their sections through it."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import SpecError, excerpt
from .device_values import DeviceValues
from .expr import Expr, parse_expr
from .scalars import as_int
from .yamlload import LocatedDict, LocatedList


class SpecContext:
    def __init__(self, path: Path, tree: Any, overrides: Mapping[str, str],
                 device: DeviceValues):
        self.path = path
        self.base = path.parent
        self.overrides = overrides
        self.device = device
        if not isinstance(tree, dict):
            raise SpecError("the spec must be a YAML mapping", line=getattr(tree, "line", None))
        self.tree: LocatedDict = tree
        self.triton = None                      # TritonEntry when kernel is `triton:`
        self.notes: list[str] = []              # for the plan (folded Triton arguments)
        self.names: Any = None                  # vars and scalar args, once the signature is known

    # -- reading one field; every error names its path and line --

    def error(self, message: str, field: str, node: Any = None, key: Any = None) -> SpecError:
        line = None
        if isinstance(node, LocatedDict):
            line = node.line_of(key) if key is not None else node.line
        elif isinstance(node, LocatedList):
            line = node.line_of(key) if isinstance(key, int) else node.line
        return SpecError(message, field=field, line=line)

    def mapping(self, value: Any, field: str, parent: Any, key: Any,
                allowed: Sequence[str], required: Sequence[str] = ()) -> LocatedDict:
        if not isinstance(value, dict):
            raise self.error(f"must be a mapping, got {kind_of(value)}", field, parent, key)
        for k in value:
            if k not in allowed:
                raise self.error(f"unknown key {excerpt(k)} (expected one of: {', '.join(allowed)})",
                                 f"{field}.{k}", value, k)
        for k in required:
            if k not in value:
                raise self.error(f"missing required key {excerpt(k)}", field, parent, key)
        return value

    def resolve_path(self, value: Any, field: str, parent: Any, key: Any,
                     must_exist: bool = True) -> Path:
        if not isinstance(value, str) or not value:
            raise self.error(f"must be a path, got {kind_of(value)}", field, parent, key)
        if "\0" in value:                 # the OS cannot open it: say so now, not after the run
            raise self.error("a path cannot hold a NUL character", field, parent, key)
        p = Path(value).expanduser()
        p = Path(os.path.normpath(p if p.is_absolute() else self.base / p))
        if must_exist and not p.exists():
            raise self.error(f"no such file: {p}", field, parent, key)
        return p

    def expr(self, value: Any, field: str, parent: Any, key: Any, arrays: bool = False) -> Expr:
        try:
            return parse_expr(value, arrays=arrays)
        except SpecError as exc:
            raise self.error(exc.message, field, parent, key) from None

    def evaluate(self, value: Any, field: str, parent: Any, key: Any) -> int | float:
        expr = self.expr(value, field, parent, key)
        try:
            return self.names.value_of(expr)
        except SpecError as exc:
            if exc.field:                  # raised while resolving a var: it names that var
                raise
            raise self.error(exc.message, field, parent, key) from None

    def integer(self, value: Any, field: str, parent: Any, key: Any,
                minimum: int | None = None, maximum: int | None = None,
                why: str = "") -> int:
        """An integer field; `why` says what the maximum is (", the block limit")."""
        number = self.evaluate(value, field, parent, key)
        result = as_int(number)
        if result is None:
            if isinstance(number, float) and (blame := self.names.blame_float(value, field)):
                raise blame
            raise self.error(f"must be an integer, got {excerpt(number)}", field, parent, key)
        if minimum is not None and result < minimum:
            raise self.error(f"must be >= {minimum}, got {result}", field, parent, key)
        if maximum is not None and result > maximum:
            raise self.error(f"must be <= {maximum}{why}, got {result}", field, parent, key)
        return result

    def boolean(self, value: Any, field: str, parent: Any, key: Any) -> bool:
        if not isinstance(value, bool):
            raise self.error(f"must be true or false, got {excerpt(value)}", field, parent, key)
        return value


def kind_of(value: Any) -> str:
    """How an error names what it found instead."""
    for kind, word in ((type(None), "nothing"), (bool, "a boolean"), (dict, "a mapping"),
                       (list, "a list"), (str, "a string"), (int, "an integer"),
                       (float, "a number")):
        if isinstance(value, kind):
            return word
    return type(value).__name__
