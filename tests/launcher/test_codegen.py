"""The generated launcher source: golden files, module names, rejected types.

Regenerate the golden files after an intended change with
CUBINRUN_UPDATE_GOLDEN=1 python -m pytest tests/launcher/test_codegen.py
"""
from __future__ import annotations

import os
import re

import pytest

from cubinrun.launcher import LAUNCHER_ABI, generate_source, module_name_for
from support.repo import REPO

GOLDEN = REPO / "tests" / "golden"

CASES = {
    "vector_add": (["*fp32", "*fp32", "*fp32", "i32"], 0),
    "mixed_scratch2": (["i1", "u64", "fp16", "bf16", "fp64", "*kbf16", "*fp8e4nv", "nvTmaDesc"], 2),
    "no_params_scratch1": ([], 1),
    "structs": (["struct[i32,fp32,*kfp32,*fp32]", "fp32x4", "struct[i8,i16[3],fp64]",
                 "*fp64"], 0),
}


@pytest.mark.parametrize("name", CASES)
def test_source_matches_golden(name):
    leaf_types, num_scratch = CASES[name]
    source = generate_source(leaf_types, num_scratch)
    golden = GOLDEN / f"launcher_{name}.c"
    if os.environ.get("CUBINRUN_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(source)
    assert source == golden.read_text(), f"regenerate with CUBINRUN_UPDATE_GOLDEN=1 ({golden})"


def test_every_slot_is_filled_and_the_constants_are_set():
    source = generate_source(["*fp32", "i32"], 2, module_name="cubinrun_launcher_test")
    assert "{{" not in source and "}}" not in source
    assert "PyMODINIT_FUNC PyInit_cubinrun_launcher_test(void)" in source
    for define in ("NUM_PARAMS 2", "NUM_SCRATCH 2", f"ABI {LAUNCHER_ABI}"):
        assert re.search(rf"^#define {define}$", source, re.M)
    assert re.search(r"&p0,\s*&p1,\s*&c->global_scratch,\s*&c->profile_scratch,", source)


def test_one_conversion_line_per_parameter():
    source = generate_source(["*kfp16", "u8", "bf16", "nvTmaDesc"])
    # immutable arguments go through CONVERT (kept converted per slot) ...
    assert re.findall(r"^  CONVERT\((\d), (to_\w+), p(\d)\);$", source, re.M) == [
        ("0", "to_ptr", "0"), ("1", "to_u8", "1"), ("2", "to_bf16", "2")]
    assert re.search(r"^  uint16_t p2; static uint16_t last_p2; /\* bf16 \*/$", source, re.M)
    # ... a tensor map, a buffer that may change between calls, is read every time
    assert re.findall(r"^  if \((to_\w+)\(kernel_args\[(\d)\], (\d), p(\d)\) < 0\) return NULL;$",
                      source, re.M) == [("to_tma_desc", "3", "3", "3")]
    # in storage aligned by hand (TinyCC 0.9.27 aligns locals to 16 bytes only)
    assert re.search(r"^  unsigned char p3_space\[TENSOR_MAP_SPACE\]; "
                     r"TensorMap \*p3 = aligned_tensor_map\(p3_space\); /\* nvTmaDesc \*/$",
                     source, re.M)
    assert re.search(r"&p2,\s*p3,\s*};", source)


def test_a_struct_is_aligned_bytes_filled_from_a_bytes_object():
    source = generate_source(["struct[i8,fp64]", "fp32x4", "i32"])
    assert re.search(r"^  ALIGNED\(8\) unsigned char p0\[16\]; /\* struct\[i8,fp64\] \*/$",
                     source, re.M)
    assert re.search(r"^  ALIGNED\(16\) unsigned char p1\[16\]; /\* fp32x4 \*/$", source, re.M)
    assert re.findall(r"^  if \(to_blob\(kernel_args\[(\d)\], (\d), p(\d), (\d+)\) < 0\) "
                      r"return NULL;$", source, re.M) == [("0", "0", "0", "16"), ("1", "1", "1", "16")]
    with pytest.raises(ValueError, match=r"unknown launcher parameter type 'struct\[f33\]'"):
        generate_source(["struct[f33]"])


def test_module_names_differ_by_signature_and_scratch():
    names = {module_name_for(types, scratch)
             for types in (["i32"], ["u32"], ["i32", "i32"], ["*fp32"], ["*kfp32"])
             for scratch in (0, 1, 2)}
    assert len(names) == 15
    assert all(re.fullmatch(r"cubinrun_launcher_[0-9a-f]{16}", n) for n in names)
    assert module_name_for(["i32"], 1) == module_name_for(["i32"], 1)
    assert f'#define MODULE_NAME "{module_name_for(["i32"], 1)}"' in generate_source(["i32"], 1)


@pytest.mark.parametrize("leaf_type", [
    "f32", "int", "*fp33", "*", "**fp32", "*kk", "constexpr", "tensordesc<fp16[4]>",
    " i32", "I32", "(i32)", "fp8e4nv"])
def test_unknown_leaf_types_are_rejected(leaf_type):
    with pytest.raises(ValueError, match="unknown launcher parameter type"):
        generate_source(["i32", leaf_type])


def test_bad_scratch_count_and_module_name_are_rejected():
    with pytest.raises(ValueError, match="num_scratch must be 0, 1 or 2"):
        generate_source(["i32"], 3)
    with pytest.raises(ValueError, match="not a C identifier"):
        generate_source(["i32"], module_name="bad-name")
