"""Triton cache entries made by each Triton release 3.4 to 3.9 for sm_90 (see
tests/fixtures/make_triton_fixtures.py): metadata, recovered signatures, and
the parameter layout checked against each cubin's own KPARAM_INFO records."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from cubinrun.errors import SpecError
from cubinrun.signature import expand, leaf_size
from cubinrun.specfile.triton_entry import read_triton_entry, signature_from_ttir
from support.repo import REPO

FIXTURES = REPO / "tests" / "fixtures" / "triton"
VERSIONS = ["3.4.0", "3.5.1", "3.6.0", "3.7.1", "3.8.0", "3.9.0"]

# The same metadata in every version.
KERNELS = {
    "add_kernel": dict(num_warps=4, num_ctas=1, cluster_dims=(1, 1, 1), shared=0,
                       global_scratch=(0, 1), cooperative=False, pdl=False, descs=0,
                       signature="*fp32,*fp32,*fp32,i32",
                       names=["x_ptr", "y_ptr", "out_ptr", "n"], divisibility=(16,) * 4),
    "scalars_kernel": dict(num_warps=1, num_ctas=1, cluster_dims=(1, 1, 1), shared=0,
                           global_scratch=(0, 1), cooperative=True, pdl=True, descs=0,
                           # signless TTIR: u16 -> i16, u32 -> i32; fp8e4b15 is i8
                           signature="*fp32,*fp16,*bf16,*fp8e4nv,*fp8e5,*i8,i32,i64,fp32,fp16,"
                                     "i1,bf16,i8,i16,i32,fp64",
                           names=["out_ptr", "h_ptr", "b_ptr", "e4_ptr", "e5_ptr", "e4b15_ptr",
                                  "a", "b", "c", "d", "flag", "bh", "k8", "k16", "u", "f64"]),
    "tma_copy_kernel": dict(num_warps=4, num_ctas=1, cluster_dims=(1, 1, 1), shared=8200,
                            global_scratch=(0, 1), cooperative=False, pdl=False, descs=2,
                            signature="tensordesc<fp16[64, 64]>,tensordesc<fp16[64, 64]>,i32,i32",
                            names=["in_desc", "out_desc", "M", "N"]),
    "make_desc_kernel": dict(num_warps=4, num_ctas=1, cluster_dims=(1, 1, 1), shared=8200,
                             global_scratch=(128, 128), cooperative=False, pdl=False, descs=0,
                             signature="*fp16,*fp16,i32,i32",
                             names=["in_ptr", "out_ptr", "M", "N"]),
    "tuple_kernel": dict(num_warps=2, num_ctas=2, cluster_dims=(2, 1, 1), shared=0,
                         global_scratch=(0, 1), cooperative=False, pdl=False, descs=0,
                         signature="(*fp32,*fp32),i32", names=["ptrs", "n"]),
    # `stride` was 1 and is folded away; x_ptr, out_ptr and n are divisible by 16
    "fold_kernel": dict(num_warps=4, num_ctas=1, cluster_dims=(1, 1, 1), shared=0,
                        global_scratch=(0, 1), cooperative=False, pdl=False, descs=0,
                        signature="*fp32,*fp32,i32", names=["x_ptr", "out_ptr", "n"],
                        divisibility=(16, 16, 16)),
}

# 3.4 names TTIR arguments %arg0, %arg1 ... and has no location names, so a
# tuple cannot be told from separate parameters.
NAMES_34 = {
    "add_kernel": ["arg0", "arg1", "arg2", "arg3"],
    "scalars_kernel": [f"arg{i}" for i in range(16)],
    "tma_copy_kernel": ["arg0", "arg5", "arg10", "arg11"],
    "make_desc_kernel": ["arg0", "arg1", "arg2", "arg3"],
    "tuple_kernel": ["arg0", "arg1", "arg2"],
    "fold_kernel": ["arg0", "arg1", "arg2"],
}
TENSORDESC_META = {"swizzle": 3, "elem_size": 2, "elem_type": 6, "block_size": [64, 64],
                   "fp4_padded": False}


def kparam_sizes(cubin: Path) -> list[int]:
    """Parameter sizes in ordinal order, from `.nv.info.<kernel>` KPARAM_INFO records."""
    from elftools.elf.elffile import ELFFile
    with cubin.open("rb") as f:
        elf = ELFFile(f)
        assert elf["e_machine"] == "EM_CUDA"
        infos = [s for s in elf.iter_sections() if s.name.startswith(".nv.info.")]
        assert len(infos) == 1
        data = infos[0].data()
    params, i = {}, 0
    while i < len(data):
        fmt, attr, value = struct.unpack_from("<BBH", data, i)
        i += 4
        if fmt == 4:                        # a payload of `value` bytes follows
            if attr == 0x17:                # KPARAM_INFO
                _, ordinal, _offset, flags = struct.unpack_from("<IHHI", data, i)
                params[ordinal] = flags >> 18
            i += value
    assert sorted(params) == list(range(len(params)))
    return [params[k] for k in range(len(params))]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_entry_metadata_and_signature(version, kernel):
    want = KERNELS[kernel]
    entry = read_triton_entry(FIXTURES / version / kernel / f"{kernel}.json")
    assert entry.name == kernel
    assert entry.cubin_path == FIXTURES / version / kernel / f"{kernel}.cubin"
    assert entry.triton_version == version
    assert entry.arch == "sm_90a"
    assert (entry.num_warps, entry.num_ctas, entry.shared) == (
        want["num_warps"], want["num_ctas"], want["shared"])
    assert entry.cluster_dims == want["cluster_dims"]
    assert (entry.global_scratch_size, entry.global_scratch_align) == want["global_scratch"]
    assert (entry.profile_scratch_size, entry.profile_scratch_align) == (0, 1)
    assert (entry.cooperative, entry.pdl) == (want["cooperative"], want["pdl"])
    # 3.8 adds `is_im2col` to each descriptor's entry
    im2col = {"is_im2col": False} if version >= "3.8" else {}
    assert entry.tensordesc_meta == [{**TENSORDESC_META, **im2col}] * want["descs"]
    assert entry.ttir.leaf_divisibility(entry.tensordesc_meta, entry.desc_flags) == want.get(
        "divisibility", (None,) * len(expand(entry.signature, entry.tensordesc_meta)))
    assert entry.num_scratch_params == (1 if version == "3.4.0" else 2)
    if version == "3.4.0":
        assert entry.signature.names() == NAMES_34[kernel]
        assert str(entry.signature) == want["signature"].replace("(", "").replace(")", "")
    else:
        assert entry.signature.names() == want["names"]
        assert str(entry.signature) == want["signature"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_expanded_signature_matches_the_cubin(version, kernel):
    entry = read_triton_entry(FIXTURES / version / kernel / f"{kernel}.json")
    leaves = expand(entry.signature, entry.tensordesc_meta)
    sizes = [leaf_size(leaf.type) for leaf in leaves] + [8] * entry.num_scratch_params
    assert sizes == kparam_sizes(entry.cubin_path)


def test_tensor_descriptors_expand_to_tma_maps():
    entry = read_triton_entry(FIXTURES / "3.6.0/tma_copy_kernel/tma_copy_kernel.json")
    types = [leaf.type for leaf in expand(entry.signature, entry.tensordesc_meta)]
    desc = ["nvTmaDesc", "i32", "i32", "i64", "i64"]
    assert types == desc + desc + ["i32", "i32"]


def test_signature_can_be_skipped_without_the_ttir(tmp_path):
    src = FIXTURES / "3.6.0/add_kernel"
    for suffix in (".json", ".cubin"):
        shutil.copy(src / f"add_kernel{suffix}", tmp_path)
    entry = read_triton_entry(tmp_path / "add_kernel.json", with_signature=False)
    assert entry.signature is None and entry.num_warps == 4
    with pytest.raises(SpecError, match=r"add_kernel\.source: cannot read the TTIR"):
        read_triton_entry(tmp_path / "add_kernel.json")


def entry_copy(tmp_path, **changes) -> Path:
    src = FIXTURES / "3.6.0/add_kernel"
    for suffix in (".cubin", ".source"):
        shutil.copy(src / f"add_kernel{suffix}", tmp_path)
    meta = json.loads((src / "add_kernel.json").read_text())
    meta.update(changes)
    path = tmp_path / "add_kernel.json"
    path.write_text(json.dumps(meta))
    return path


def test_errors_name_the_file(tmp_path):
    with pytest.raises(SpecError, match=r"nope\.json: cannot read the Triton metadata"):
        read_triton_entry(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(SpecError, match=r"bad\.json:1: not valid JSON"):
        read_triton_entry(tmp_path / "bad.json")
    with pytest.raises(SpecError, match="group index; give the kernel's own add_kernel.json"):
        read_triton_entry(tmp_path / "__grp__add_kernel.json")
    path = entry_copy(tmp_path, target={"backend": "hip", "arch": "gfx942", "warp_size": 64})
    with pytest.raises(SpecError, match="no integer `target.arch`"):
        read_triton_entry(path)
    path = entry_copy(tmp_path, target={"backend": "hip", "arch": 942})
    with pytest.raises(SpecError, match="'hip' backend, not cuda"):
        read_triton_entry(path)
    path = entry_copy(tmp_path, num_warps="4")
    with pytest.raises(SpecError, match="`num_warps` should be an integer"):
        read_triton_entry(path)
    path = entry_copy(tmp_path)
    (tmp_path / "add_kernel.source").write_text("module {\n}\n")
    with pytest.raises(SpecError, match=r"add_kernel\.source: no `tt\.func public`"):
        read_triton_entry(path)
    (tmp_path / "add_kernel.cubin").unlink()
    with pytest.raises(SpecError, match="the cubin add_kernel.cubin is not beside it"):
        read_triton_entry(path)


def test_missing_keys_take_triton_defaults(tmp_path):
    path = entry_copy(tmp_path)
    meta = json.loads(path.read_text())
    for key in ("profile_scratch_size", "profile_scratch_align", "global_scratch_size",
                "global_scratch_align", "tensordesc_meta", "triton_version"):
        del meta[key]
    path.write_text(json.dumps(meta))
    entry = read_triton_entry(path)
    assert (entry.profile_scratch_size, entry.profile_scratch_align) == (0, 1)
    assert (entry.global_scratch_size, entry.global_scratch_align) == (0, 1)
    assert entry.tensordesc_meta is None and entry.triton_version is None
    assert entry.num_scratch_params == 0


def test_ttir_with_aliased_locations_and_attributes():
    text = """#loc = loc("k.py":1:0)
#loc3 = loc("a b"(#loc))
#loc4 = loc("desc"(#loc))
module {
  tt.func private @helper(%x: i32) {
  }
  tt.func public @k(%a: !tt.ptr<f16, 1> {tt.divisibility = 16 : i32} loc(#loc3), \
%desc: !tt.tensordesc<tensor<8x16x32xbf16, #shared>> loc(#loc4), %desc_0: i32 loc(#loc4), \
%desc_1: i32 loc(#loc4), %desc_2: i32 loc(#loc4), %desc_3: i64 loc(#loc4), \
%desc_4: i64 loc(#loc4), %desc_5: i64 loc(#loc4), %0: i1 loc("odd,\\22name"(#loc))) {
"""
    sig = signature_from_ttir(text, kernel="k")
    assert sig.names() == ["a_b", "desc", "odd__name"]
    assert str(sig) == "*fp16,tensordesc<bf16[8, 16, 32]>,i1"


def test_ttir_types_cubinrun_cannot_pass():
    with pytest.raises(SpecError, match=r"k\.source: kernel argument %x has type "
                                        r"!tt\.ptr<f8E4M3FNUZ>"):
        signature_from_ttir("tt.func public @k(%x: !tt.ptr<f8E4M3FNUZ>) {", file="k.source")
    with pytest.raises(SpecError, match="should be followed by i32, i64 .* found i32, i32"):
        signature_from_ttir("tt.func public @k(%d: !tt.tensordesc<tensor<64xf32>>, "
                            "%d_0: i32, %d_1: i32) {")
    with pytest.raises(SpecError, match="argument list never closes"):
        signature_from_ttir("tt.func public @k(%d: i32")


def newer_entry(tmp_path, version="3.10.0", **changes) -> Path:
    src = FIXTURES / "3.9.0/add_kernel"
    for suffix in (".cubin", ".source"):
        shutil.copy(src / f"add_kernel{suffix}", tmp_path)
    meta = json.loads((src / "add_kernel.json").read_text())
    meta.update(triton_version=version, **changes)
    path = tmp_path / "add_kernel.json"
    path.write_text(json.dumps(meta))
    return path


def test_an_entry_from_a_newer_release_is_read_with_a_note(tmp_path):
    entry = read_triton_entry(newer_entry(tmp_path, warp_specialize=True))
    assert entry.version == (3, 10) and entry.desc_flags == 2
    assert str(entry.signature) == "*fp32,*fp32,*fp32,i32"
    assert len(entry.notes) == 1
    assert "Triton 3.10.0 is newer than the releases cubinrun knows (3.4-3.9)" in entry.notes[0]
    assert "keys 3.9 does not write: warp_specialize" in entry.notes[0]


def test_an_entry_from_a_newer_release_that_does_not_read_names_it(tmp_path):
    path = newer_entry(tmp_path)
    ttir = (tmp_path / "add_kernel.source").read_text()
    (tmp_path / "add_kernel.source").write_text(ttir.replace("!tt.ptr<f32>", "!tt.ptr2<f32>", 1))
    with pytest.raises(SpecError, match=r"has type !tt\.ptr2<f32>, which cubinrun cannot pass.*"
                                        r"this entry is from Triton 3\.10\.0, newer than"):
        read_triton_entry(path)
    # a known release with the same TTIR: the plain message
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, "triton_version": "3.9.0"}))
    with pytest.raises(SpecError) as err:
        read_triton_entry(path)
    assert "newer than" not in str(err.value)


def test_a_spec_signature_needs_no_readable_ttir(tmp_path):
    path = newer_entry(tmp_path, version="3.9.0")
    (tmp_path / "add_kernel.source").write_text("not a TTIR")
    entry = read_triton_entry(path, with_signature=False)
    assert entry.ttir is None and entry.signature is None
    assert "not checked against what Triton specialized" in entry.notes[0]


def test_ttir_divisibility_lines_up_with_decomposed_descriptors():
    text = ("tt.func public @k(%d: !tt.tensordesc<16x32xf32> {tt.divisibility = 16 : i32} "
            "loc(\"d\"(#loc)), %d.shape.0: i32 {tt.divisibility = 16 : i32} loc(\"d.shape.0\"), "
            "%d.shape.1: i32 loc(\"d.shape.1\"), %d.stride.0: i64 {tt.divisibility = 16 : i32} "
            "loc(\"d.stride.0\"), %d.stride.1: i64 loc(\"d.stride.1\"), "
            "%t.0: i32 {tt.divisibility = 8 : i32} loc(\"t.0\")) {")
    from cubinrun.specfile.triton_entry import read_ttir
    ttir = read_ttir(text)
    assert str(ttir.signature) == "tensordesc<fp32[16, 32]>,(i32)"
    assert ttir.names == ("d", "t")
    tail = (16, None, 16, None)
    assert ttir.leaf_divisibility([{"swizzle": 0}], 2) == (16,) + tail + (8,)
    # decomposed: base, 2 shapes, 2 strides and 2 flags before the tail
    assert ttir.leaf_divisibility(None, 2) == (16,) + (None,) * 6 + tail + (8,)
    assert len(expand(ttir.signature, None, 2)) == 12


def test_what_cubinrun_does_not_make_is_refused_by_name(tmp_path):
    with pytest.raises(SpecError, match="instrumentation_mode 'gsan': Triton 3.8\\+ passes"):
        read_triton_entry(newer_entry(tmp_path, version="3.9.0", instrumentation_mode="gsan"))
    meta = [{**TENSORDESC_META, "is_im2col": True}]
    with pytest.raises(SpecError, match=r"tensordesc_meta\[0\] is an im2col tensor descriptor"):
        read_triton_entry(newer_entry(tmp_path, version="3.9.0", tensordesc_meta=meta))
