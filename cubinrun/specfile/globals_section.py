"""`globals:`: the module variables (`__constant__`, `__device__`) a spec fills.

Each entry is an array, `{dtype, shape, init}` as a buffer's, or a scalar,
`{dtype, value}` (shape `()`). `dtype` is required: a cubin records only a
global's size. Whether the symbol exists and is big enough is checked against
the binary (module_globals.py), where both are known.
"""
from __future__ import annotations


from ..dtypes import ELEMENT_TYPES
from ..errors import excerpt
from .yamlload import LocatedDict
from . import sections
from .model import BufferArg, Init


def read_globals(builder, args_builder, buffers: dict[str, BufferArg]
                 ) -> tuple[dict[str, BufferArg], dict[str, int]]:
    """(globals by symbol, YAML line of each) from the spec's `globals:`."""
    b, t = builder, builder.tree
    if "globals" not in t:
        return {}, {}
    node = t["globals"]
    if not isinstance(node, dict):
        raise b.error("must be a mapping of symbol name to {dtype, shape, init} or "
                      "{dtype, value}", "globals", t, "globals")
    found: dict[str, BufferArg] = {}
    lines: dict[str, int] = {}
    for name, entry in node.items():
        field = f"globals.{name}"
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise b.error(f"{excerpt(name)} is not a symbol name", field, node, name)
        if name in buffers or name in b.names.raw:
            what = "a buffer argument" if name in buffers else "a var or scalar argument"
            raise b.error(f"{excerpt(name)} is also {what}: a name means one thing in "
                          "expressions", field, node, name)
        entry = b.mapping(entry, field, node, name, sections.keys("global"),
                          required=sections.required("global"))
        dtype = ELEMENT_TYPES.get(entry["dtype"]) if isinstance(entry["dtype"], str) else None
        if dtype is None:
            raise b.error(f"unknown dtype {excerpt(entry['dtype'])}; known: "
                          f"{', '.join(ELEMENT_TYPES)}", f"{field}.dtype", entry, "dtype")
        if ("shape" in entry) == ("value" in entry):
            raise b.error("needs exactly one of shape (an array) or value (a scalar)",
                          field, node, name)
        if "value" in entry:
            if "init" in entry:
                raise b.error("a scalar global takes value, not init", f"{field}.init",
                              entry, "init")
            value = entry["value"]
            if not isinstance(value, (bool, float)):
                value = b.evaluate(value, f"{field}.value", entry, "value")
            args_builder.check_fill(dtype, value, f"{field}.value", entry, "value")
            found[name] = BufferArg(name, dtype, (), Init("fill", value=value),
                                    section="globals")
        else:
            shape = args_builder.shape(entry, dtype, field)
            init = args_builder.init(entry.get("init", "zeros"), f"{field}.init", entry, "init",
                                     dtype)
            found[name] = BufferArg(name, dtype, shape, init, section="globals")
        if isinstance(node, LocatedDict) and (line := node.line_of(name)) is not None:
            lines[name] = line
    return found, lines
