"""The spec format as a JSON Schema (draft 2020-12), built from sections.py,
the table the loader validates keys with.

Editors (the YAML language server in VS Code and others) use it to complete
keys, show each key's line of help and flag unknown keys and wrong kinds of
value as you type. It checks the shape of a spec, not its meaning: whether a
var exists, an expression parses or a buffer fits is the loader's work
(`cubinrun launch --dry-run`). The package ships a copy,
cubinrun/data/spec.schema.json; a test keeps it equal to `schema()`.
"""
from __future__ import annotations

import json
from typing import Any

from ..limits import MAX_DIMS
from . import sections
from .loader import ARCH_PATTERN

SCHEMA_FILE = "data/spec.schema.json"       # in the package
_IDENTIFIER = "^[A-Za-z_][A-Za-z0-9_]*$"
_EXPR = {"type": ["number", "string"],
         "description": "A number or an expression (N * 4, cdiv(N, BLOCK))."}


# How an editor's YAML parser reads a call written in flow style (yamlload.py
# joins the pieces again): `[cdiv(N, B)]` is two items, `cdiv(N` and `B)`, and
# `{grid: cdiv(N, B)}` a value `cdiv(N` and a key `B)` with no value. A piece
# that closes a parenthesis it never opened is such a split call; the schema
# takes the pieces as cubinrun takes the call (what the call means is the
# loader's to check).
_SPLIT_CALL = r"^[^(]*\)"


def _dims(most: int) -> dict:
    """1 to `most` expressions; more items only where calls were split."""
    return {"anyOf": [_EXPR, {"type": "array", "items": _EXPR, "minItems": 1,
                              "if": {"contains": {"type": "string", "pattern": _SPLIT_CALL}},
                              "else": {"maxItems": most}}]}


def _split_calls_allowed(node):
    """`node` with every mapping also taking the keys a split call leaves
    (`B)`, with no value)."""
    if isinstance(node, list):
        return [_split_calls_allowed(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _split_calls_allowed(value) for key, value in node.items()}
    if out.get("type") == "object":
        out["patternProperties"] = {_SPLIT_CALL: {"type": "null"}}
        if "propertyNames" in out:
            out["propertyNames"] = {"anyOf": [out["propertyNames"], {"pattern": _SPLIT_CALL}]}
    return out


def _value(kind: str) -> dict:
    """The schema of one kind of value a key of sections.py takes."""
    if kind.startswith("section:"):
        return {"$ref": f"#/$defs/{kind.split(':', 1)[1]}"}
    simple = {
        "expr": _EXPR,
        "bool": {"type": "boolean"},
        "path": {"type": "string", "minLength": 1},
        "string": {"type": "string"},
        "choice": {},
        "strings": {"type": "array", "items": {"type": "string"}},
        "arch": {"type": "string", "pattern": f"^{ARCH_PATTERN.pattern}$"},
        "dims": _dims(3),
        "shape": _dims(MAX_DIMS),
        "init": {"anyOf": [{"enum": list(sections.INIT_NAMES)}, {"$ref": "#/$defs/init"}]},
        "buffer_or_name": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/buffer"}]},
        "signature": {"type": "object", "propertyNames": {"pattern": _IDENTIFIER},
                      "additionalProperties": {"$ref": "#/$defs/type"}},
        "constants": {"type": "object"},
        "vars": {"type": "object", "propertyNames": {"pattern": _IDENTIFIER},
                 "additionalProperties": _EXPR},
        "args": {"type": "object", "additionalProperties": {"$ref": "#/$defs/arg"}},
        "check": {"type": "object", "additionalProperties": {"$ref": "#/$defs/check_entry"}},
        "globals": {"type": "object", "additionalProperties": {"$ref": "#/$defs/global"}},
        "sweep": {"type": "object", "propertyNames": {"pattern": _IDENTIFIER},
                  "additionalProperties": {"anyOf": [
                      {"type": ["number", "string"]},
                      {"type": "array", "items": {"type": ["number", "string"]},
                       "minItems": 1}]}},
        "constraints": {"type": "array", "items": {"type": "string"}},
    }
    return dict(simple[kind])


def _key(key: sections.Key) -> dict:
    out = _value(key.value)
    if key.choices:
        out["enum"] = list(key.choices)
    out["description"] = key.doc
    return out


def _section(name: str) -> dict:
    out: dict[str, Any] = {
        "type": "object",
        "properties": {k.name: _key(k) for k in sections.SECTIONS[name]},
    }
    if required := sections.required(name):
        out["required"] = list(required)
    if one_of := sections.EXACTLY_ONE.get(name):
        out["oneOf"] = [{"required": [k]} for k in one_of]
    return out


def _closed(name: str) -> dict:
    return {**_section(name), "additionalProperties": False}


def schema() -> dict:
    """The JSON Schema of a spec."""
    defs = {name: _closed(name) for name in sections.SECTIONS if name not in ("spec", "launch")}
    # A Triton spec's launch: may repeat any key of the entry's JSON (num_stages,
    # maxnreg, ...), which the schema cannot read: open for Triton, closed otherwise.
    defs["launch"] = _section("launch")
    defs["type"] = {"anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"$ref": "#/$defs/type"}, "minItems": 1}],
        "description": "A parameter type: i32, fp16, *fp32, *kbf16, constexpr, nvTmaDesc, "
                       "tensordesc<fp16[64, 64]>, struct[i32, *fp32], fp32x4, i16[3]; a list "
                       "is a tuple."}
    defs["arg"] = {"anyOf": [
        {"type": ["number", "string", "boolean", "null"]},
        {"$ref": "#/$defs/buffer"},
        {"$ref": "#/$defs/alias"},
        {"$ref": "#/$defs/descriptor"},
        {"type": "array", "items": {"$ref": "#/$defs/arg"}}],
        "description": "A scalar's expression, a pointer's buffer (or null, or a place in "
                       "another's buffer: {into, at}), a descriptor, "
                       "or a list for a tuple or struct."}
    top = _closed("spec")
    return _split_calls_allowed({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "cubinrun spec",
        "description": "A YAML spec for `cubinrun launch`: one compiled CUDA kernel, its "
                       "arguments, grid, checks and timing.",
        **top,
        "if": {"required": ["kernel"], "properties": {"kernel": {"required": ["triton"]}}},
        "else": {"properties": {"launch": {"$ref": "#/$defs/launch",
                                           "unevaluatedProperties": False}}},
        "$defs": dict(sorted(defs.items())),
    })


def schema_text() -> str:
    """The schema as the package ships it and `cubinrun schema` prints it."""
    return json.dumps(schema(), indent=2) + "\n"
