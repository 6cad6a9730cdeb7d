"""Kernels that take a nested or template class by value (`ns::Kernel<A>::Params`,
CUTLASS's `GemmUniversal<...>::Params`, cuBLAS's `cutlass::Kernel2<...>(...::Params)`)
are one parameter each, for the name parser and for the check of a spec against
the cubin: a capture's spec of such a kernel must never be refused by cubinrun's
own check. The cubins are compiled here by NVRTC from real class nests; two are
then changed as library cubins come: their parameter sections not flagged as
linked to their kernel, and their per-parameter records stripped."""
from __future__ import annotations

import struct
import textwrap
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from cubinrun.binary.cubin import CubinInfo, KernelInfo, read_cubin
from cubinrun.binary.names import kernel_name, param_types, parse_name
from support.cli import run

SOURCE = r'''
namespace ns { template <typename A> struct Kernel { struct Params { A* out; A alpha; int n; }; }; }
struct cutlass_80_simt_sgemm_128x128_8x4_nn_align1 { struct Params { float* c; float alpha; int m, n, k; }; };
namespace cutlass {
template <typename Op> __global__ void Kernel2(typename Op::Params p) { if (threadIdx.x == 0) p.c[0] = p.alpha; }
template __global__ void Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params);
}
template <typename A> __global__ void run(typename ns::Kernel<A>::Params p) { if (threadIdx.x == 0) p.out[0] = p.alpha + p.n; }
template __global__ void run<float>(ns::Kernel<float>::Params);
'''
SGEMM = "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_128x128_8x4_nn_align1EEvNT_6ParamsE"
RUN = "_Z3runIfEvN2ns6KernelIT_E6ParamsE"
SGEMM_SPEC = f'''\
kernel: {{cubin: {{CUBIN}}, name: {SGEMM}}}
signature: {{a0: "struct[*u8, u32, u32, u32, u32]"}}
args: {{a0: [{{shape: [4], dtype: u8}}, 1, 2, 3, 4]}}
grid: [1]
block: [32]
'''

# Demangled names as c++filt and cpp-demangle write them for the kernels of the issue
REAL_NAMES = {
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>"
    "(cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params)":
        ["cutlass_80_simt_sgemm_128x128_8x4_nn_align1::Params"],
    "void run<float>(ns::Kernel<float>::Params)": ["ns::Kernel<float>::Params"],
    "void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::"
    "MmaMultistage<cutlass::gemm::GemmShape<128, 128, 32>, float, cutlass::layout::RowMajor>, "
    "cutlass::epilogue::threadblock::Epilogue<cutlass::gemm::GemmShape<128, 128, 32>, 4>, "
    "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, false> >"
    "(cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::MmaMultistage<"
    "cutlass::gemm::GemmShape<128, 128, 32>, float, cutlass::layout::RowMajor>, "
    "cutlass::epilogue::threadblock::Epilogue<cutlass::gemm::GemmShape<128, 128, 32>, 4>, "
    "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, false>::Params)":
        ["cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::MmaMultistage<"
         "cutlass::gemm::GemmShape<128,128,32>,float,cutlass::layout::RowMajor>,"
         "cutlass::epilogue::threadblock::Epilogue<cutlass::gemm::GemmShape<128,128,32>,4>,"
         "cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>,false>::Params"],
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)":
        ["int", "at::native::CUDAFunctor_add<float>", "std::array<char*,3ul>"],
}


@pytest.mark.parametrize("demangled", REAL_NAMES)
def test_a_class_passed_by_value_is_one_parameter(demangled):
    kernel = KernelInfo("_Zsym", demangled, [], 0, None, 0, None, None, None, None, None)
    assert param_types(kernel) == REAL_NAMES[demangled]
    assert parse_name(demangled) is not None and kernel_name(kernel).base


@pytest.fixture(scope="module")
def cubin(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("nested")
    (folder / "nested.cu").write_text(SOURCE)
    spec = folder / "build.yaml"
    spec.write_text(textwrap.dedent(f'''\
        kernel: {{source: nested.cu, name: {SGEMM}}}
        signature: {{a0: "struct[*u8, u32, u32, u32, u32]"}}
        args: {{a0: [{{shape: [4], dtype: u8}}, 1, 2, 3, 4]}}
        grid: [1]
        block: [32]
        '''))
    from cubinrun.binary.load import load_binary
    from cubinrun.specfile import load_spec
    binary = load_binary(load_spec(spec), "sm_90")
    path = folder / "nested.cubin"
    path.write_bytes(binary.cubin)
    return path


def _kernels(data: bytes) -> dict[str, KernelInfo]:
    info: CubinInfo = read_cubin(data)
    return {k.name: k for k in info.kernels}


def test_each_nested_params_kernel_has_its_one_parameter(cubin):
    kernels = _kernels(cubin.read_bytes())
    assert [p.size for p in kernels[SGEMM].params] == [24]
    assert [p.size for p in kernels[RUN].params] == [16]


def _dry_run(capsys, folder: Path, cubin: Path, spec_text: str) -> tuple[int, str]:
    spec = folder / "spec.yaml"
    spec.write_text(spec_text.replace("{CUBIN}", str(cubin)))
    code, out, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(spec))
    return code, err


def test_a_capture_style_spec_of_a_nested_params_kernel_passes_the_check(cubin, capsys, tmp_path):
    code, err = _dry_run(capsys, tmp_path, cubin, SGEMM_SPEC)
    assert code == 0, err


def _info_sections(data: bytearray):
    elf = ELFFile(__import__("io").BytesIO(bytes(data)))
    for index, section in enumerate(elf.iter_sections()):
        if section.name.startswith(".nv.info."):
            yield elf, index, section


def _without_info_link(data: bytes) -> bytes:
    """The `.nv.info.<kernel>` sections with SHF_INFO_LINK cleared and no sh_info."""
    changed = bytearray(data)
    for elf, index, section in list(_info_sections(changed)):
        header = elf["e_shoff"] + index * elf["e_shentsize"]
        flags_at, info_at = header + 8, header + 44       # ELF64 Shdr: sh_flags, sh_info
        struct.pack_into("<Q", changed, flags_at, section["sh_flags"] & ~0x40)
        struct.pack_into("<I", changed, info_at, 0)
    return bytes(changed)


def _without_param_records(data: bytes) -> bytes:
    """Every per-parameter record (attribute 0x17) renamed to an attribute no one reads."""
    changed = bytearray(data)
    for _, _, section in list(_info_sections(changed)):
        pos, end = section["sh_offset"], section["sh_offset"] + section["sh_size"]
        while pos + 4 <= end:
            fmt, attr, value = struct.unpack_from("<BBH", changed, pos)
            if attr == 0x17:
                changed[pos + 1] = 0x7e
            pos += 4 + (value if fmt == 4 else 0)
    return bytes(changed)


def test_parameter_sections_found_by_name_when_not_flagged_as_linked(cubin, capsys, tmp_path):
    unlinked = tmp_path / "unlinked.cubin"
    unlinked.write_bytes(_without_info_link(cubin.read_bytes()))
    assert [p.size for p in _kernels(unlinked.read_bytes())[SGEMM].params] == [24]
    code, err = _dry_run(capsys, tmp_path, unlinked, SGEMM_SPEC)
    assert code == 0, err


def test_a_cubin_without_parameter_records_is_checked_by_its_parameter_bytes(cubin, capsys,
                                                                             tmp_path):
    stripped = tmp_path / "stripped.cubin"
    stripped.write_bytes(_without_param_records(cubin.read_bytes()))
    kernel = _kernels(stripped.read_bytes())[SGEMM]
    assert kernel.params == [] and kernel.param_bytes == 24
    code, err = _dry_run(capsys, tmp_path, stripped, SGEMM_SPEC)
    assert code == 0, err
    wrong = SGEMM_SPEC.replace("u32, u32]", "u32, u32, u64]").replace("3, 4]", "3, 4, 5]")
    code, err = _dry_run(capsys, tmp_path, stripped, wrong)
    assert code == 2 and "the signature's parameters take 32 bytes but" in err \
        and "take 24 (the cubin lists no single parameter)" in err, err
