import pytest

from cubinrun.errors import SpecError
from cubinrun.signature import (PointerType, TensorDescType, TupleType, expand, leaf_size,
                                parse_compact, parse_signature, parse_type)

SCALARS = "i1 i8 i16 i32 i64 u1 u8 u16 u32 u64 fp16 bf16 fp32 fp64".split()


@pytest.mark.parametrize("name", SCALARS)
def test_every_scalar_parses_and_expands_to_itself(name):
    sig = parse_signature({"v": name})
    assert [leaf.type for leaf in expand(sig)] == [name]


@pytest.mark.parametrize("text, const, pointee", [
    ("*fp32", False, "fp32"), ("*kfp16", True, "fp16"), ("*i8", False, "i8"),
    ("*fp8e4nv", False, "fp8e4nv"), ("*kfp8e5", True, "fp8e5"), ("*fp8e4b15", False, "fp8e4b15"),
    ("*u64", False, "u64"), ("*bf16", False, "bf16"),
])
def test_pointers(text, const, pointee):
    ty = parse_type(text, "f")
    assert isinstance(ty, PointerType) and ty.const is const and ty.pointee.name == pointee
    assert str(ty) == text


@pytest.mark.parametrize("text, fragment", [
    ("f32", "unknown type 'f32'"),
    ("*f33", "unknown pointee type 'f33'"),
    ("int", "unknown type"),
    ("tensordesc<fp99[4]>", "unknown element type 'fp99'"),
    ("tensordesc<fp16[a, 4]>", "must be integers"),
    ("tensordesc<fp16[0]>", "1 to 5 positive block dims"),
    ("tensordesc<fp16[1,1,1,1,1,1]>", "1 to 5 positive block dims"),
    ("fp8e4nv", "unknown type"),               # fp8 is pointee-only
])
def test_unknown_types_name_the_parameter(text, fragment):
    with pytest.raises(SpecError, match=fragment.replace("[", r"\[")) as err:
        parse_signature({"a": "i32", "bad": text})
    assert err.value.field == "signature.bad"


def test_non_identifier_names_non_mappings_and_empty_tuples():
    with pytest.raises(SpecError, match="not an identifier"):
        parse_signature({"1x": "i32"})
    with pytest.raises(SpecError, match="mapping"):
        parse_signature(None)
    with pytest.raises(SpecError, match="empty tuple"):
        parse_signature({"t": []})


def test_a_kernel_without_parameters_has_an_empty_signature():
    for sig in (parse_signature({}), parse_compact(""), parse_compact("  ")):
        assert sig.params == () and expand(sig) == []


def test_constexpr_is_not_passed_and_tuples_flatten_in_order():
    sig = parse_signature({"x": "*fp32", "BLOCK": "constexpr",
                           "t": ["i32", ["fp16", "constexpr", "*kbf16"], "i64"], "n": "u32"})
    leaves = expand(sig)
    assert [(l.path, l.type) for l in leaves] == [
        ("x", "*fp32"), ("t[0]", "i32"), ("t[1][0]", "fp16"), ("t[1][2]", "*kbf16"),
        ("t[2]", "i64"), ("n", "u32")]


def test_tensordesc_without_metadata_is_the_seeds_decomposition():
    sig = parse_signature({"d": "tensordesc<fp16[64, 32]>"})
    leaves = expand(sig)
    # base, 2 shapes (i64), 2 strides (i64), padding (i1), then 2 shapes (i32), 2 strides (i64)
    assert [l.type for l in leaves] == ["*fp16", "i64", "i64", "i64", "i64", "i1",
                                        "i32", "i32", "i64", "i64"]
    assert [l.role for l in leaves] == ["desc.base", "desc.shape", "desc.shape", "desc.strides",
                                        "desc.strides", "desc.padding", "desc.shape2",
                                        "desc.shape2", "desc.strides2", "desc.strides2"]


def test_tensordesc_with_metadata_is_a_tma_descriptor():
    sig = parse_signature({"a": "tensordesc<bf16[128]>", "b": "tensordesc<fp32[8, 8, 8]>"})
    leaves = expand(sig, [{"swizzle": 0}, None])
    assert [l.type for l in leaves] == (["nvTmaDesc", "i32", "i64"]
                                        + ["*fp32"] + ["i64"] * 6 + ["i1"] + ["i32"] * 3 + ["i64"] * 3)


def test_tensordesc_meta_count_must_match():
    sig = parse_signature({"a": "tensordesc<bf16[128]>"})
    with pytest.raises(SpecError, match="tensordesc_meta has 2 entries"):
        expand(sig, [{}, {}])


def test_compact_form_with_tuples_and_tensordesc():
    sig = parse_compact("*fp32, (i32,(fp16,i8)), tensordesc<fp16[64, 64]>,nvTmaDesc,constexpr")
    assert sig.names() == ["arg0", "arg1", "arg2", "arg3", "arg4"]
    assert isinstance(sig["arg1"], TupleType)
    assert isinstance(sig["arg2"], TensorDescType) and sig["arg2"].block == (64, 64)
    assert str(sig) == "*fp32,(i32,(fp16,i8)),tensordesc<fp16[64, 64]>,nvTmaDesc,constexpr"
    with pytest.raises(SpecError, match="empty type"):
        parse_compact("*fp32,,i32")


def test_leaf_sizes():
    assert [leaf_size(t) for t in ("*fp32", "nvTmaDesc", "i1", "i16", "fp16", "u32", "fp64")] == \
        [8, 128, 1, 2, 2, 4, 8]
