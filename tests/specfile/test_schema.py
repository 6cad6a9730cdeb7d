"""The JSON Schema: built from the loader's own table of keys, shipped in the
package unchanged, and every sample spec valid against it."""
from __future__ import annotations

import copy
import importlib.resources
import json

import pytest
from support.repo import REPO
from support.cli import run

from cubinrun.specfile import sections
from cubinrun.specfile.loader import TOP_LEVEL_KEYS
from cubinrun.specfile.schema import SCHEMA_FILE, schema, schema_text
from cubinrun.specfile.yamlload import load_yaml_file

jsonschema = pytest.importorskip("jsonschema")      # the `test` extra has it

SPECS = sorted(p for p in (REPO / "configs").rglob("*.yaml"))
VALIDATOR = jsonschema.Draft202012Validator(schema())


def errors(tree) -> list[str]:
    return [f"{e.json_path}: {e.message}" for e in VALIDATOR.iter_errors(tree)]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def test_the_shipped_copy_is_the_generated_schema():
    shipped = importlib.resources.files("cubinrun").joinpath(SCHEMA_FILE).read_text()
    assert shipped == schema_text(), \
        "regenerate it: cubinrun schema -o cubinrun/data/spec.schema.json --force"


def test_cubinrun_schema_prints_it(capsys, tmp_path):
    code, out, err = run(capsys, "schema")
    assert (code, err) == (0, "")
    assert json.loads(out) == schema()
    target = tmp_path / "spec.schema.json"
    assert run(capsys, "schema", "-o", target)[0] == 0
    assert target.read_text() == schema_text()
    code, _, err = run(capsys, "schema", "-o", target)          # kept without --force
    assert code == 2 and "--force" in err


def test_the_schema_and_the_loader_know_the_same_keys():
    assert tuple(schema()["properties"]) == TOP_LEVEL_KEYS
    defs = schema()["$defs"]
    for name, keys in sections.SECTIONS.items():
        if name != "spec":
            assert tuple(defs[name]["properties"]) == tuple(k.name for k in keys)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(REPO / "configs")))
def test_every_sample_spec_is_valid(path):
    assert errors(load_yaml_file(path)) == []


VECTOR_ADD = load_yaml_file(REPO / "configs" / "vector_add.yaml")


@pytest.mark.parametrize("change, where", [
    (lambda s: s.update(lauch={}), "$"),                                   # a typo
    (lambda s: s["bench"].update(l2="warm"), "$.bench.l2"),
    (lambda s: s["kernel"].update(source="k.cu"), "$.kernel"),             # two binaries
    (lambda s: s["launch"].update(num_stages=3), "$.launch"),              # Triton's key
    (lambda s: s["args"]["x"].update(init="randn"), "$.args.x"),
    (lambda s: s["args"]["x"].update(shape=[1] * 9), "$.args.x"),
    (lambda s: s.pop("grid"), "$"),
])
def test_mistakes_are_flagged(change, where):
    spec = copy.deepcopy(dict(VECTOR_ADD))
    spec.setdefault("bench", {})
    spec.setdefault("launch", {})
    change(spec)
    found = errors(spec)
    assert found and any(e.startswith(where) for e in found), found


def test_a_triton_spec_may_repeat_the_entry_s_launch_keys():
    spec = dict(load_yaml_file(REPO / "configs" / "triton_add.yaml"))
    spec["launch"] = {**spec.get("launch", {}), "num_stages": 3}
    assert errors(spec) == []


# Every section of sections.py in one spec, so each can get an unknown key.
EVERY_SECTION = """\
kernel: {cubin: k.cubin, name: k}
signature: {x: "*fp32", d: nvTmaDesc, n: i32, y: "*fp32"}
vars: {N: 256}
args:
  x: {shape: [N], init: {random: normal, seed: 1}}
  d: {buffer: x, block: [64]}
  n: N
  y: {into: x, at: 16}
grid: [1]
launch: {num_warps: 4, global_scratch: {size: 64}}
globals:
  d_filter: {dtype: fp32, shape: [9], init: random}
check:
  x: {expect: x, rtol: 0}
bench: {l2: hot}
"""
SECTION_PATHS = {"spec": (), "kernel": ("kernel",), "launch": ("launch",),
                 "scratch": ("launch", "global_scratch"), "buffer": ("args", "x"),
                 "init": ("args", "x", "init"), "descriptor": ("args", "d"),
                 "check_entry": ("check", "x"), "bench": ("bench",),
                 "global": ("globals", "d_filter"), "alias": ("args", "y")}


def test_the_spec_with_every_section_loads_and_is_valid(write_spec):
    from cubinrun.specfile import load_spec
    path = write_spec(EVERY_SECTION)
    load_spec(path)
    assert errors(load_yaml_file(path)) == []
    assert set(SECTION_PATHS) == set(sections.SECTIONS)


@pytest.mark.parametrize("section", SECTION_PATHS)
def test_the_loader_and_the_schema_refuse_the_same_unknown_key(write_spec, section):
    import yaml

    from cubinrun.errors import SpecError
    from cubinrun.specfile import load_spec
    tree = yaml.safe_load(EVERY_SECTION)
    node = tree
    for key in SECTION_PATHS[section]:
        node = node[key]
    node["bogus"] = 1
    path = write_spec(yaml.safe_dump(tree, sort_keys=False))
    with pytest.raises(SpecError, match="unknown (top-level )?key 'bogus'"):
        load_spec(path)
    assert errors(load_yaml_file(path))


# As an editor reads it (a plain YAML parser: no rejoining of calls split at a
# comma in flow style), what cubinrun accepts is valid (issue 46).
SPLIT_CALLS = """\
kernel: {cubin: k.cubin, name: k}
vars: {NX: 64, NY: 64, BX: 16, BY: 16, TILES: cdiv(NX, BX)}
args:
  x: {shape: [cdiv(NX, 2), max(NY, 1)], init: zeros}
grid: [cdiv(NX, BX), cdiv(NY, BY)]
block: [BX, BY]
check:
  x: {expect: maximum(x, 0)}
"""


def test_calls_split_by_flow_style_are_valid_as_an_editor_reads_them(write_spec):
    import yaml
    as_cubinrun_reads_it = load_yaml_file(write_spec(SPLIT_CALLS))
    assert as_cubinrun_reads_it["grid"] == ["cdiv(NX, BX)", "cdiv(NY, BY)"]
    assert errors(as_cubinrun_reads_it) == []
    as_an_editor_reads_it = yaml.safe_load(SPLIT_CALLS)
    assert as_an_editor_reads_it["grid"] == ["cdiv(NX", "BX)", "cdiv(NY", "BY)"]
    assert errors(as_an_editor_reads_it) == []


def test_more_than_three_dims_are_still_flagged_where_no_call_was_split():
    import yaml
    spec = yaml.safe_load(SPLIT_CALLS.replace("grid: [cdiv(NX, BX), cdiv(NY, BY)]",
                                              "grid: [1, 2, 3, 4]"))
    assert any(e.startswith("$.grid") for e in errors(spec))
