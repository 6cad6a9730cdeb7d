"""What a `check:` entry names beyond a whole buffer: a region of an output
(`"x_new[1:-1, 1:-1]"`) and a Python reference (`reference: refs.py:conv2d`).

A reference file is found and its function located by parsing the file with
`ast`, never by importing it: a dry run (and `gen`, `inspect`, a CI job
without a GPU) must not run the user's code. The file must be a regular file
inside the spec's folder tree, reached without symbolic links, so a spec
cannot point cubinrun at code elsewhere by a link.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any, Mapping

from ..errors import SpecError, excerpt
from .expr import parse_expr, region_parts
from ..files import read_text
from ..limits import MAX_SOURCE_BYTES
from .model import PythonReference


def split_key(key: Any) -> tuple[str, Any]:
    """(output name, region expression or None) of a check key: `x` or `"x[1:-1, :]"`."""
    if not isinstance(key, str) or not key:
        raise SpecError(f"{excerpt(key)} is not an output name")
    if key.isidentifier():
        return key, None
    expr = parse_expr(key, arrays=True)
    body = expr.tree.body
    if not isinstance(body, ast.Subscript) or not isinstance(body.value, ast.Name):
        raise SpecError(f"{excerpt(key)} is neither an output name nor a slice of one "
                        f"(`x[1:-1, :]`)")
    return body.value.id, body


def region(subscript: ast.Subscript, scalars: Mapping[str, Any]) -> tuple:
    """The index a region key stands for, its bounds evaluated (vars, scalar args)."""
    return tuple(region_parts(subscript, scalars))


def python_reference(value: Any, spec_folder: Path) -> PythonReference:
    """`FILE.py:FUNCTION` found without running it (see the module docstring)."""
    if not isinstance(value, str) or value.count(":") != 1:
        raise SpecError(f"must be FILE.py:FUNCTION, got {excerpt(value)}")
    file, function = value.split(":")
    if not function.isidentifier():
        raise SpecError(f"{excerpt(function)} is not a Python function name")
    relative = Path(file)
    # an anchor (a root or a drive: "/etc", "C:", "\\x" on Windows) is never relative
    if not file.endswith(".py") or relative.anchor or ".." in relative.parts \
            or "\0" in file:
        raise SpecError(f"{excerpt(file)} must be a .py file in the spec's folder or below it "
                        "(a relative path without ..)")
    path = spec_folder
    for part in relative.parts:
        path = path / part
        if path.is_symlink():
            raise SpecError(f"{path} is a symbolic link: a reference file is read only "
                            "from the spec's own folder tree")
    if not path.is_file():
        raise SpecError(f"{path}: no such file" if not path.exists() else
                        f"{path} is not a regular file")
    text = read_text(path, MAX_SOURCE_BYTES, "Python reference")
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError) as exc:
        where = f":{exc.lineno}" if getattr(exc, "lineno", None) else ""
        raise SpecError(f"{path}{where}: not valid Python "
                        f"({getattr(exc, 'msg', None) or exc})") from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return PythonReference(Path(os.path.normpath(path)), function, node.lineno)
    defined = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef))
    raise SpecError(f"{path} defines no function {function!r} at its top level "
                    f"(it defines: {', '.join(defined) or 'none'})")
