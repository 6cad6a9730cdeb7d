"""Structs, arrays and vectors passed by value: spelling, C layout (checked
against the C compiler), packing, the spec's args and the checks against the
cubin."""
from __future__ import annotations

import random
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cubinrun.binary.names import kernel_of
from cubinrun.signature.aggregates import (ArrayType, StructType, fields, offsets, parse_aggregate,
                                 size_align)
from cubinrun.errors import SpecError
from cubinrun.launcher.build import find_compiler
from cubinrun.plan.packing import pack_struct, round_to_16_bits, scalar_bytes
from cubinrun.signature import PointerType, ScalarType, expand, leaf_size, parse_type
from cubinrun.plan.slots import Member

from support.repo import REPO

STRUCTS_CUBIN = REPO / "kernels" / "build" / "structs.sm_90.cubin"


@pytest.mark.parametrize("text, size, align, member_offsets", [
    ("struct[i32, fp32, *fp32, *fp32]", 24, 8, [0, 4, 8, 16]),
    ("struct[i8, i16[3], fp64]", 16, 8, [0, 2, 8]),
    ("struct[i8, fp64x2]", 32, 16, [0, 16]),       # double2 is 16-aligned
    ("struct[u8, struct[u8, i16]]", 6, 2, [0, 2]),
    ("fp32x4", 16, 16, [0, 4, 8, 12]),             # float4
    ("fp32x3", 12, 4, [0, 4, 8]),                  # float3 keeps float's alignment
    ("i8x2", 2, 2, [0, 1]),
    ("fp16x2", 4, 4, [0, 2]),                      # __half2
    ("i64x4", 32, 16, [0, 8, 16, 24]),             # longlong4_16a
    ("i8[3]", 3, 1, [0, 1, 2]),
    ("i32[2][3]", 24, 4, [0, 12]),                 # 2 arrays of 3, as C reads it
    ("struct[i32, i8][2]", 16, 4, [0, 8]),
])
def test_layout_by_c_rules(text, size, align, member_offsets):
    ty = parse_type(text, "signature.p")
    assert size_align(ty) == (size, align) and offsets(ty) == member_offsets
    assert leaf_size(str(ty)) == size
    assert str(parse_type(str(ty), "f")) == str(ty)        # the spelling round-trips


def test_arrays_nest_in_c_order_and_fields_name_every_value():
    ty = parse_type("struct[i8, i16[2][3], struct[*kfp32, u8][2]]", "f")
    inner = ty.members[1]
    assert isinstance(inner, ArrayType) and inner.count == 2 and inner.element.count == 3
    assert [(f.path, f.offset, f.type) for f in fields(ty, "p")] == [
        ("p[0]", 0, "i8"),
        ("p[1][0][0]", 2, "i16"), ("p[1][0][1]", 4, "i16"), ("p[1][0][2]", 6, "i16"),
        ("p[1][1][0]", 8, "i16"), ("p[1][1][1]", 10, "i16"), ("p[1][1][2]", 12, "i16"),
        ("p[2][0][0]", 16, "*kfp32"), ("p[2][0][1]", 24, "u8"),
        ("p[2][1][0]", 32, "*kfp32"), ("p[2][1][1]", 40, "u8")]


def test_an_aggregate_is_one_parameter():
    from cubinrun.signature import parse_signature
    leaves = expand(parse_signature({"p": "struct[i32, *fp32]", "v": "fp32x4", "n": "i32"}))
    assert [(leaf.path, leaf.type) for leaf in leaves] == [
        ("p", "struct[i32,*fp32]"), ("v", "fp32x4"), ("n", "i32")]


@pytest.mark.parametrize("text, fragment", [
    ("struct[]", "at least one member"),
    ("struct[i32", "unknown type 'struct[i32'"),
    ("struct[i32,,fp32]", "bad member list"),
    ("struct[nvTmaDesc]", "cannot be a struct or array member"),
    ("struct[constexpr]", "cannot be a struct or array member"),
    ("struct[tensordesc<fp16[4]>]", "cannot be a struct or array member"),
    ("struct[f33]", "unknown type 'f33'"),
    ("struct[*f33]", "unknown pointee type 'f33'"),
    ("u1x2", "a vector's element is one of"),
    ("fp32x5", "unknown type"),
    ("i32[0]", "'i32[0]': an array needs at least one element"),
    ("u8[40000]", "40000 bytes; kernel parameters hold at most 32764"),
    ("struct[u8[20000], u8[20000]]", "hold at most 32764"),
    ("i32" + "[1]" * 20, "nest at most 8 deep"),
    ("struct[" * 3000 + "i32" + "]" * 3000, "a type of 24003 characters (at most 4000)"),
    ("i32[" + "9" * 1000 + "]", "has too many elements"),
    ("i32[" + "9" * 5000 + "]", "a type of 5005 characters (at most 4000)"),
])
def test_bad_aggregates_are_one_spec_error(text, fragment):
    with pytest.raises(SpecError) as err:
        parse_type(text, "signature.p")
    assert fragment in err.value.message and err.value.field == "signature.p"
    assert len(err.value.message) < 300


def test_random_type_spellings_parse_or_fail_with_one_spec_error():
    tokens = ["struct[", "]", "[", ",", " ", "i32", "fp32", "i8", "u1", "*fp32", "*k", "x4",
              "x3", "4", "0", "40000", "(", ")", "fp16", "nvTmaDesc", "constexpr", "<", ">"]
    rng = random.Random(1)
    parsed = 0
    for _ in range(5000):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 14)))
        try:
            ty = parse_type(text, "f")
        except SpecError as err:
            assert len(err.message) < 400
            continue
        parsed += 1
        if parse_aggregate(str(ty), "f") is not None:
            assert str(parse_type(str(ty), "g")) == str(ty) and size_align(ty)[0] <= 32764
    assert parsed > 50                   # the tokens do make valid types


def test_other_types_are_not_aggregates():
    for text in ("i32", "*fp32", "nvTmaDesc", "constexpr", "tensordesc<fp16[64, 64]>"):
        assert parse_aggregate(text, "f") is None


# --- the layout against the C compiler -------------------------------------

C_SCALARS = {"i1": "_Bool", "u1": "unsigned char", "i8": "signed char", "u8": "unsigned char",
             "i16": "short", "u16": "unsigned short", "i32": "int", "u32": "unsigned int",
             "i64": "long long", "u64": "unsigned long long", "fp16": "unsigned short",
             "bf16": "unsigned short", "fp32": "float", "fp64": "double"}


class _CDeclarations:
    """C typedefs for random aggregates; vectors are declared as vector_types.h
    declares them (a struct of N elements with __align__)."""

    def __init__(self):
        self.lines: list[str] = []
        self.names: dict[object, str] = {}

    def declare(self, ty, name: str) -> str:
        if isinstance(ty, ScalarType):
            return f"{C_SCALARS[ty.dtype.name]} {name}"
        if isinstance(ty, PointerType):
            return f"void *{name}"
        if isinstance(ty, ArrayType) and not ty.vector:
            return self.declare(ty.element, f"{name}[{ty.count}]")
        return f"{self.typedef(ty)} {name}"

    def typedef(self, ty) -> str:
        if ty not in self.names:
            if isinstance(ty, StructType):
                body = " ".join(self.declare(m, f"m{i}") + ";" for i, m in enumerate(ty.members))
                line = f"typedef struct {{ {body} }}"
            else:
                align = size_align(ty)[1]
                line = (f"typedef struct __attribute__((aligned({align}))) "
                        f"{{ {C_SCALARS[ty.element.dtype.name]} v[{ty.count}]; }}")
            self.names[ty] = f"T{len(self.names)}"      # after the members' own typedefs
            self.lines.append(f"{line} {self.names[ty]};")
        return self.names[ty]


def _random_type(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth >= 3 or roll < 0.45:
        return rng.choice(list(C_SCALARS) + ["*fp32", "*ki8"])
    if roll < 0.6:
        return rng.choice(["i8", "i16", "i32", "i64", "fp16", "fp32", "fp64"]) + \
            f"x{rng.randint(1, 4)}"
    if roll < 0.75:
        return f"{_random_type(rng, depth + 1)}[{rng.randint(1, 3)}]"
    members = [_random_type(rng, depth + 1) for _ in range(rng.randint(1, 5))]
    return "struct[" + ", ".join(members) + "]"


def test_random_structs_match_the_c_compilers_layout(tmp_path):
    rng = random.Random(9)
    types = [parse_type("struct[" + ", ".join(_random_type(rng) for _ in range(rng.randint(1, 6)))
                        + "]", "f") for _ in range(150)]
    decls = _CDeclarations()
    prints = []
    for ty in types:
        tag = decls.typedef(ty)
        prints.append(f'printf("%zu %zu", sizeof({tag}), _Alignof({tag}));')
        prints += [f'printf(" %zu", offsetof({tag}, m{i}));' for i in range(len(ty.members))]
        prints.append('printf("\\n");')
    source = tmp_path / "layout.c"
    source.write_text("#include <stddef.h>\n#include <stdio.h>\n" + "\n".join(decls.lines)
                      + "\nint main(void) {\n" + "\n".join(prints) + "\nreturn 0;\n}\n")
    binary = tmp_path / "layout"
    subprocess.run(find_compiler().executable([str(source)], str(binary), ["-std=c11"]), check=True)
    lines = subprocess.run([str(binary)], check=True, capture_output=True,
                           text=True).stdout.splitlines()
    for ty, line in zip(types, lines, strict=True):
        size, align, *member_offsets = map(int, line.split())
        assert (size_align(ty), offsets(ty)) == ((size, align), member_offsets), str(ty)


# --- packing ---------------------------------------------------------------

def test_pack_struct_places_every_member_and_zeroes_padding():
    members = [Member("p[0]", 0, "i8", "scalar", -7), Member("p[1]", 8, "*fp32", "buffer", "x"),
               Member("p[2]", 16, "*fp32", "null", None), Member("p[3]", 24, "bf16", "scalar", 1.5),
               Member("p[4]", 26, "i1", "scalar", 1)]
    blob = pack_struct(32, members, {"x": 0xABCDEF00}.__getitem__)
    assert blob == struct.pack("<b7xQQHB5x", -7, 0xABCDEF00, 0, 0x3FC0, 1)


@pytest.mark.parametrize("type_name, value, raw", [
    ("i8", -128, b"\x80"), ("u8", 255, b"\xff"), ("i16", -2, b"\xfe\xff"),
    ("u32", 2**32 - 1, b"\xff" * 4), ("i64", -1, b"\xff" * 8), ("u64", 2**63, b"\0" * 7 + b"\x80"),
    ("u1", True, b"\x01"), ("fp32", -0.0, b"\0\0\0\x80"), ("fp64", 2.0**-1074, b"\x01" + b"\0" * 7),
    ("fp32", float("inf"), b"\0\0\x80\x7f"),
])
def test_scalar_bytes(type_name, value, raw):
    assert scalar_bytes(type_name, value) == raw


def test_fp16_rounds_as_python_and_bf16_as_ml_dtypes_without_double_rounding():
    import ml_dtypes
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 5, 2000),
                             [0.0, -0.0, 65504.0, 2.0**-24, 3 * 2.0**-25, 2.0**-26, -1e-30,
                              float("inf"), float("-inf")]])
    for v in values:
        assert round_to_16_bits(v, 10, 15) == struct.unpack("<H", struct.pack("<e", v))[0], v
        v32 = float(np.float32(v))                      # exact in fp32: one rounding only
        expected = int(np.array(v32, dtype=np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))
        assert round_to_16_bits(v32, 7, 127) == expected, v32
    # 1 + 2**-8 + 2**-30 is just above a tie: rounding through fp32 first gives 1.0
    assert round_to_16_bits(1.0039062509313226, 7, 127) == 0x3F81
    assert round_to_16_bits(float("nan"), 7, 127) == 0x7FC0
    with pytest.raises(OverflowError):
        round_to_16_bits(65520.0, 10, 15)


# --- the spec: args, names, checks against the cubin -----------------------

def _spec(tmp_path: Path, signature: str, args: str, extra: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"kernel: {{cubin: {STRUCTS_CUBIN}, name: struct_saxpy}}\n"
                    f"signature:\n{signature}\nvars: {{N: 64}}\nargs:\n{args}\n"
                    f"grid: [1]\n{extra}")
    return path


SIGNATURE = ("  p: struct[i32, fp32, *kfp32, *fp32]\n  scale: fp32x4\n"
             "  t: struct[i8, i16[3], fp64]\n  a: \"*fp64\"\n  b: \"*fp64\"")
ARGS = ("  p: [N, 2.5, {shape: [N]}, {shape: [N]}]\n  scale: [1, 2, 3, 4]\n"
        "  t: [-7, [1, 2, 3], 0.5]\n  a: {shape: [1]}\n  b: {shape: [1]}")


def test_members_are_names_in_expressions_and_buffers(tmp_path):
    from cubinrun.plan.make import make_plan
    from cubinrun.specfile import StructArg, load_spec
    spec = load_spec(_spec(tmp_path, SIGNATURE, ARGS.replace("[N, 2.5", "[N, 't[2] * 5'"),
                           "block: ['p[0]']\ncheck:\n  'p[3]': {expect: 'p[1] * p[2]'}\n"))
    assert spec.block == (64, 1, 1) and spec.scalars["p[1]"] == 2.5
    assert spec.scalars["t[1][2]"] == 3 and list(spec.buffers) == ["p[2]", "p[3]", "a", "b"]
    assert isinstance(spec.args[0], StructArg) and spec.checks[0].output == "p[3]"
    slot = make_plan(spec).slots[1]
    assert slot.kind == "struct" and [m.value for m in slot.members] == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("args_edit, field, fragment", [
    (("[-7, [1, 2, 3], 0.5]", "[-7, [1, 2], 0.5]"), "args.t[1]",
     "i16[3] needs a list of 3 values, one per element, got 2"),
    (("[-7, [1, 2, 3], 0.5]", "[-700, [1, 2, 3], 0.5]"), "args.t[0]",
     "-700 is out of range for i8"),
    (("scale: [1, 2, 3, 4]", "scale: 4"), "args.scale",
     "fp32x4 needs a list of 4 values, one per element, got no list"),
    (("[N, 2.5,", "[N, 2.5, 3,"), "args.p", "needs a list of 4 values, one per member, got 5"),
    (("[N, 2.5,", "[N, M,"), "args.p[1]", "unknown name 'M'"),
])
def test_bad_struct_values_name_the_member(tmp_path, args_edit, field, fragment):
    from cubinrun.specfile import load_spec
    with pytest.raises(SpecError) as err:
        load_spec(_spec(tmp_path, SIGNATURE, ARGS.replace(*args_edit)))
    assert err.value.field == field and fragment in err.value.message
    assert err.value.line is not None


@pytest.mark.parametrize("edits, fragment", [
    ([("scale: fp32x4", "scale: fp32[3]"), ("[1, 2, 3, 4]", "[1, 2, 3]")],
     "fp32[3] is 12 bytes (by C rules its members start at bytes 0, 4, 8) but parameter 1 of "
     "struct_saxpy is 16 bytes"),
    ([("*kfp32, *fp32]", "*kfp32]"), ("{shape: [N]}, {shape: [N]}]", "{shape: [N]}]")],
     "struct[i32,fp32,*kfp32] is 16 bytes (by C rules its members start at bytes 0, 4, 8) but "
     "parameter 0 of struct_saxpy is 24 bytes"),
])
def test_the_cubin_refutes_a_wrong_struct(tmp_path, edits, fragment):
    from cubinrun.binary.cubin import load_cubin
    from cubinrun.binary.validate import check_params
    from cubinrun.plan.make import make_plan
    from cubinrun.specfile import load_spec
    signature, args = SIGNATURE, ARGS
    for old, new in edits:
        assert old in signature + args
        signature, args = signature.replace(old, new), args.replace(old, new)
    spec = load_spec(_spec(tmp_path, signature, args))
    with pytest.raises(SpecError) as err:
        check_params(make_plan(spec), kernel_of(load_cubin(STRUCTS_CUBIN), "struct_saxpy"))
    assert fragment in err.value.message


def test_a_struct_more_aligned_than_its_offset_is_refused():
    from dataclasses import replace

    from cubinrun.binary.cubin import load_cubin
    from cubinrun.binary.validate import check_params
    from cubinrun.plan.make import make_plan
    from cubinrun.specfile import load_spec
    kernel = kernel_of(load_cubin(STRUCTS_CUBIN), "struct_saxpy")
    # a packed struct: the cubin puts the 16-byte float4 at offset 24, not 32
    params = [replace(p, offset=24) if p.ordinal == 1 else p for p in kernel.params]
    spec = load_spec(REPO / "configs" / "structs.yaml")
    with pytest.raises(SpecError) as err:
        check_params(make_plan(spec), replace(kernel, params=params))
    assert err.value.field == "signature.scale"
    assert "fp32x4 is aligned to 16 bytes but struct_saxpy has parameter 1 at offset 24" in \
        err.value.message


def test_a_struct_inside_a_tuple_and_a_long_array_in_the_plan(tmp_path):
    from cubinrun.plan.make import make_plan
    from cubinrun.specfile import load_spec
    spec = load_spec(_spec(tmp_path, '  t:\n    - struct[i32, *fp32]\n    - u8[20]',
                           "  t:\n    - [3, {shape: [4]}]\n    - [" + ", ".join(["7"] * 20) + "]"))
    first, second = make_plan(spec).slots
    assert (first.leaf.path, first.leaf.type) == ("t[0]", "struct[i32,*fp32]")
    assert list(spec.buffers) == ["t[0][1]"] and spec.scalars["t[0][0]"] == 3
    assert first.describe() == "{3, buffer t[0][1]}"
    assert second.describe() == "{7, 7, 7, 7, 7, 7, 7, 7, ... 12 more}"
