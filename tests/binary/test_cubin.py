"""cubinrun.binary.cubin against cubins built by tests/fixtures/make_cubins.sh.

Expected registers, static shared memory and stack sizes are what
`nvcc -Xptxas -v` (13.0.88) printed for these builds; on an H200 the driver
(cuFuncGetAttribute, cuFuncGetParamInfo) reported the same registers, shared
and local sizes and parameter offsets for the sm_90 fixtures.
"""
from __future__ import annotations

import json
import re
import struct
import subprocess
import sys

import pytest

from cubinrun.binary.cubin import (demangle, extract_cubins, is_fatbin, load_cubin,
                            load_cubins, read_cubin, read_fatbin)
from cubinrun.binary.names import kernel_of
from cubinrun.errors import SpecError
from support.repo import REPO

CUBINS = REPO / "tests" / "fixtures" / "cubins"
TRITON = REPO / "tests" / "fixtures" / "triton"


@pytest.fixture(scope="module")
def infos():
    """Each fixture read once: name -> CubinInfo."""
    return {path.name: load_cubin(path) for path in CUBINS.glob("*.cubin")}


def kernel(infos, fixture: str, name: str):
    return kernel_of(infos[fixture], name)


def layout(k) -> list[tuple[int, int, int]]:
    return [(p.ordinal, p.offset, p.size) for p in k.params]


# --- arch -----------------------------------------------------------------

# (fixture, arch, sm, variant, EI_ABIVERSION, e_flags)
ARCHS = [
    ("params.sm_80.cubin", "sm_80", 80, "", 8, 0x06005004),
    ("params.sm_90.cubin", "sm_90", 90, "", 8, 0x06005A04),
    ("params.sm_100a.cubin", "sm_100a", 100, "a", 8, 0x06006402),
    ("resources.sm_120.cubin", "sm_120", 120, "", 8, 0x06007802),
    # CUDA 13 gives sm_90/sm_90a and sm_100a/sm_100f the same e_flags:
    # .nv.compat attribute 0x09 marks "a", only the tkinfo note names "f".
    ("cluster.sm_90.cubin", "sm_90", 90, "", 8, 0x06005A04),
    ("cluster.sm_90a.cubin", "sm_90a", 90, "a", 8, 0x06005A04),
    ("cluster.sm_100a.cubin", "sm_100a", 100, "a", 8, 0x06006402),
    ("cluster.sm_100f.cubin", "sm_100f", 100, "f", 8, 0x06006402),
    ("cluster.sm_120.cubin", "sm_120", 120, "", 8, 0x06007802),
    ("cluster.sm_120a.cubin", "sm_120a", 120, "a", 8, 0x06007802),
    # ptxas 12.9: old ABI below sm_100 ("a" is e_flags 0x800), new ABI from
    # sm_100 on with "a" as e_flags 0x8 and no .nv.compat attribute 0x09.
    ("resources.sm_80.cuda12.cubin", "sm_80", 80, "", 7, 0x00500550),
    ("resources.sm_90a.cuda12.cubin", "sm_90a", 90, "a", 7, 0x005A0D5A),
    ("params.sm_100a.cuda12.cubin", "sm_100a", 100, "a", 8, 0x0600640A),
]


@pytest.mark.parametrize("fixture, arch, sm, variant, abi, flags", ARCHS)
def test_arch(infos, fixture, arch, sm, variant, abi, flags):
    info = infos[fixture]
    assert (info.arch, info.sm, info.variant) == (arch, sm, variant)
    assert (info.abi_version, info.elf_flags) == (abi, flags)


def test_toolkit_version_from_note(infos):
    assert infos["params.sm_90.cubin"].toolkit == "13.0.88"
    assert infos["params.sm_100a.cuda12.cubin"].toolkit == "12.9.86"
    assert infos["resources.sm_80.cuda12.cubin"].toolkit is None   # no tkinfo note


# --- parameters -----------------------------------------------------------

PARAMS_ALL_ARCHS = ["params.sm_80.cubin", "params.sm_90.cubin", "params.sm_100a.cubin",
                    "params.sm_100a.cuda12.cubin"]


@pytest.mark.parametrize("fixture", PARAMS_ALL_ARCHS)
def test_scalar_widths(infos, fixture):
    k = kernel(infos, fixture, "scalar_widths")
    # int8, int16, int32, int64, double, float*: each at its natural alignment
    assert layout(k) == [(0, 0, 1), (1, 2, 2), (2, 4, 4), (3, 8, 8), (4, 16, 8), (5, 24, 8)]
    assert k.param_bytes == 32


@pytest.mark.parametrize("fixture", PARAMS_ALL_ARCHS)
def test_odd_structs_by_value(infos, fixture):
    k = kernel(infos, fixture, "odd_struct")
    # Odd5 {u8[5]}, int, Mixed {double; char} (16 bytes), float*
    assert layout(k) == [(0, 0, 5), (1, 8, 4), (2, 16, 16), (3, 32, 8)]
    assert k.param_bytes == 40
    assert k.local == 8          # ptxas: "8 bytes stack frame" (a struct copy)


@pytest.mark.parametrize("fixture", PARAMS_ALL_ARCHS)
def test_many_params(infos, fixture):
    k = kernel(infos, fixture, "many_params")
    assert [p.ordinal for p in k.params] == list(range(20))
    assert [p.offset for p in k.params] == [0, 8, 16, 24, 32, 40, 48, 52, 56, 64, 72, 74,
                                            76, 80, 88, 92, 96, 104, 108, 112]
    assert [p.size for p in k.params] == [1, 8, 1, 8, 2, 8, 1, 4, 1, 8, 2, 2, 1, 8, 4, 1,
                                          8, 4, 1, 8]
    assert k.param_bytes == 120


# CUDA 13's CUtensorMap is alignas(128), and the alignment holds for its
# address in constant bank 0, whose parameter area starts at 0x160 (sm_80),
# 0x210 (sm_90) or 0x380 (sm_100): so the offset depends on the arch.
@pytest.mark.parametrize("fixture, desc_offset", [
    ("params.sm_80.cubin", 32), ("params.sm_90.cubin", 112), ("params.sm_100a.cubin", 128)])
def test_tensor_map_offset(infos, fixture, desc_offset):
    k = kernel(infos, fixture, "tensor_map")
    assert layout(k) == [(0, 0, 8), (1, desc_offset, 128), (2, desc_offset + 128, 4)]
    assert k.param_bytes == desc_offset + 132


def test_no_params(infos):
    k = kernel(infos, "params.sm_90.cubin", "no_params")
    assert k.params == [] and k.param_bytes == 0 and k.registers == 4


# --- resources ------------------------------------------------------------

# (kernel, registers on sm_80 / sm_90 / sm_120, static shared, local) from ptxas -v
RESOURCES = [
    ("static_smem", (12, 14, 14), 1024, 0),
    ("no_smem", (10, 10, 10), 0, 0),
    ("dynamic_smem", (12, 12, 12), 0, 0),
    ("bounded", (10, 10, 10), 0, 0),
    ("max_regs", (10, 10, 10), 0, 0),
    ("stack_array", (32, 32, 40), 0, 256),
    ("_Z5scaleIfEvPT_S0_i", (8, 8, 8), 0, 0),
    ("_Z5scaleIdEvPT_S0_i", (8, 8, 10), 0, 0),
]


@pytest.mark.parametrize("name, registers, shared, local", RESOURCES)
@pytest.mark.parametrize("column, fixture", [
    (0, "resources.sm_80.cubin"), (1, "resources.sm_90.cubin"), (2, "resources.sm_120.cubin"),
    (0, "resources.sm_80.cuda12.cubin"), (1, "resources.sm_90a.cuda12.cubin")])
def test_resources(infos, fixture, column, name, registers, shared, local):
    k = kernel(infos, fixture, name)
    assert k.registers == registers[column]
    # sm_90+ .nv.shared.<kernel> sections carry the driver's 1 KiB on top
    assert k.shared_static == shared
    assert k.local == local


def test_reserved_shared_block_is_in_the_section():
    """The 1 KiB taken off on sm_90+ is really in the file (and not on sm_80)."""
    from elftools.elf.elffile import ELFFile
    sizes = {}
    for fixture in ("resources.sm_80.cubin", "resources.sm_90.cubin", "resources.sm_120.cubin"):
        with open(CUBINS / fixture, "rb") as f:
            section = ELFFile(f).get_section_by_name(".nv.shared.static_smem")
            sizes[fixture] = section["sh_size"]
    assert sizes == {"resources.sm_80.cubin": 1024, "resources.sm_90.cubin": 2048,
                     "resources.sm_120.cubin": 2048}


@pytest.mark.parametrize("fixture", ["resources.sm_80.cubin", "resources.sm_90.cubin",
                                     "resources.sm_90a.cuda12.cubin"])
def test_launch_limits(infos, fixture):
    bounded = kernel(infos, fixture, "bounded")
    assert bounded.max_threads == (256, 1, 1)
    # __launch_bounds__(256, 2) leaves no min-blocks record: ptxas turns it
    # into a register cap of 65536 / (256 * 2)
    assert bounded.max_registers == 128
    assert kernel(infos, fixture, "max_regs").max_registers == 40
    plain = kernel(infos, fixture, "no_smem")
    assert plain.max_threads is None and plain.required_block is None
    assert plain.cluster is None
    assert plain.max_registers == 255      # what ptxas writes when nothing was asked


@pytest.mark.parametrize("fixture", ["cluster.sm_90.cubin", "cluster.sm_100a.cubin",
                                     "cluster.sm_120a.cubin"])
def test_clusters_and_required_block(infos, fixture):
    clustered = kernel(infos, fixture, "clustered")
    assert clustered.cluster == (2, 1, 1) and clustered.max_threads is None
    both = kernel(infos, fixture, "clustered_bounded")
    assert both.cluster == (4, 2, 1) and both.max_threads == (128, 1, 1)
    fixed = kernel(infos, fixture, "fixed_block")
    # __block_size__ is .reqntid plus .blocksareclusters with a 1x1x1 cluster
    assert fixed.required_block == (128, 2, 1) and fixed.cluster == (1, 1, 1)
    assert [k.registers for k in infos[fixture].kernels] == [10, 10, 10]


# --- names ----------------------------------------------------------------


def test_template_kernels_are_demangled(infos):
    info = infos["resources.sm_90.cubin"]
    by_name = {k.name: k.demangled for k in info.kernels}
    assert by_name["_Z5scaleIfEvPT_S0_i"] == "void scale<float>(float*, float, int)"
    assert by_name["_Z5scaleIdEvPT_S0_i"] == "void scale<double>(double*, double, int)"
    assert by_name["static_smem"] is None


def test_all_kernels_are_found(infos):
    names = sorted(k.name for k in infos["resources.sm_90.cubin"].kernels)
    assert names == sorted(["static_smem", "no_smem", "dynamic_smem", "bounded", "max_regs",
                            "stack_array", "_Z5scaleIfEvPT_S0_i", "_Z5scaleIdEvPT_S0_i"])


def test_demangle_rejects_non_symbols():
    assert demangle("add_kernel") is None
    assert demangle("_Znot a symbol") is None
    assert demangle("_Z3fooi") == "foo(int)"


def test_demangle_needs_no_libstdcxx():
    """cpp-demangle does it on every platform (Windows has no libstdc++)."""
    pytest.importorskip("cpp_demangle")
    assert demangle("_Z5scaleIfEvPT_S0_i") == "void scale<float>(float*, float, int)"
    assert demangle("_ZN4cute4copyEv") == "cute::copy()"
    assert demangle("_Z" + "A" * 5000) is None                  # past MAX_DEMANGLE_CHARS


@pytest.mark.skipif(sys.platform != "linux", reason="the fallback is libstdc++, a Linux library")
def test_without_cpp_demangle_libstdcxx_demangles(monkeypatch):
    monkeypatch.setitem(sys.modules, "cpp_demangle", None)     # import fails
    assert demangle("_Z5scaleIdEvPT_S0_i") == "void scale<double>(double*, double, int)"
    assert demangle("_Znot a symbol") is None


def test_kernel_lookup(infos):
    info = infos["resources.sm_90.cubin"]
    assert kernel_of(info, "void scale<float>(float*, float, int)").name == "_Z5scaleIfEvPT_S0_i"
    assert kernel_of(info, "bounded").max_threads == (256, 1, 1)
    with pytest.raises(SpecError, match="has no kernel 'nope'; it has .*static_smem"):
        kernel_of(info, "nope")
    with pytest.raises(SpecError, match="holds 8 kernels"):
        kernel_of(info, None)


# --- JSON -----------------------------------------------------------------

SPEC_KERNEL_KEYS = {"name", "params", "param_bytes", "registers", "shared_static", "local",
                    "max_threads", "cluster"}


def test_json_has_the_spec_keys(infos):
    document = json.loads(json.dumps(infos["cluster.sm_90a.cubin"].to_json()))
    assert document["arch"] == "sm_90a"
    assert (document["sm"], document["variant"], document["abi_version"]) == (90, "a", 8)
    by_name = {k["name"]: k for k in document["kernels"]}
    for entry in by_name.values():
        assert SPEC_KERNEL_KEYS <= entry.keys()
    assert by_name["clustered_bounded"]["cluster"] == [4, 2, 1]
    assert by_name["clustered_bounded"]["max_threads"] == [128, 1, 1]
    assert by_name["clustered"]["max_threads"] is None
    assert by_name["fixed_block"]["required_block"] == [128, 2, 1]
    assert by_name["clustered"]["params"] == [{"ordinal": 0, "offset": 0, "size": 8}]


# --- errors ---------------------------------------------------------------


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.cubin"
    with pytest.raises(SpecError, match=re.escape(f"{missing}: no such file")):
        load_cubin(missing)


def test_not_an_elf_file(tmp_path):
    text = tmp_path / "kernel.cu"
    text.write_text("__global__ void k() {}\n")
    with pytest.raises(SpecError, match=re.escape(f"{text} is not an ELF file")):
        load_cubin(text)


def test_elf_for_another_machine():
    data = bytearray((CUBINS / "params.sm_90.cubin").read_bytes())
    struct.pack_into("<H", data, 18, 62)        # EM_X86_64
    with pytest.raises(SpecError, match=r"x\.o is an ELF file for machine 62, not a CUDA"):
        read_cubin(bytes(data), "x.o")


def test_truncated_cubin():
    data = (CUBINS / "params.sm_90.cubin").read_bytes()[:3000]
    with pytest.raises(SpecError, match="cut.cubin is not a readable cubin"):
        read_cubin(data, "cut.cubin")


def test_fatbin_is_not_a_cubin():
    with pytest.raises(SpecError, match="params.fatbin is a fatbin, not a cubin"):
        load_cubin(CUBINS / "params.fatbin")


# --- fatbins --------------------------------------------------------------


def test_fatbin_entries():
    data = (CUBINS / "params.fatbin").read_bytes()
    assert is_fatbin(data) and not is_fatbin((CUBINS / "params.sm_90.cubin").read_bytes())
    entries = read_fatbin(data)
    assert [(e.kind, e.sm, e.variant, e.compressed) for e in entries] == [
        ("cubin", 80, "", False), ("cubin", 90, "a", False), ("ptx", 90, "a", False)]
    assert entries[2].payload.lstrip().startswith(b".version 9.0\n.target sm_90a")


def test_cubins_inside_a_fatbin():
    infos = load_cubins(CUBINS / "params.fatbin")
    assert [i.arch for i in infos] == ["sm_80", "sm_90a"]
    assert infos[1].path.endswith("params.fatbin [1]")
    tensor_map = kernel_of(infos[1], "tensor_map")
    assert layout(tensor_map) == [(0, 0, 8), (1, 112, 128), (2, 240, 4)]
    assert extract_cubins((CUBINS / "params.fatbin").read_bytes())[0][:4] == b"\x7fELF"


def test_load_cubins_on_a_plain_cubin():
    assert [i.arch for i in load_cubins(CUBINS / "cluster.sm_120a.cubin")] == ["sm_120a"]


def test_compressed_fatbin_is_reported():
    data = (CUBINS / "cluster.compressed.fatbin").read_bytes()
    assert [(e.kind, e.sm, e.compressed) for e in read_fatbin(data)] == [
        ("cubin", 90, True), ("ptx", 90, True)]
    with pytest.raises(SpecError, match="sm_90 cubin is compressed.*--no-compress"):
        extract_cubins(data, "c.fatbin")


def test_truncated_fatbin():
    data = (CUBINS / "params.fatbin").read_bytes()
    with pytest.raises(SpecError, match="f.fatbin is a truncated fatbin"):
        read_fatbin(data[:5000], "f.fatbin")


# --- NVRTC (CUDA 13.x newer than nvcc's) ----------------------------------

ONE_KERNEL = 'extern "C" __global__ void only(int* x) { x[threadIdx.x] = 1; }'

# cuda.h includes <stdlib.h>, which NVRTC lacks: a CUtensorMap look-alike.
NVRTC_SOURCE = r"""
struct alignas(64) TensorMapLike { unsigned long long opaque[16]; };
extern "C" __global__ void __launch_bounds__(128)
rt_kernel(float* out, const __grid_constant__ TensorMapLike desc, short n) {
  __shared__ float s[64];
  s[threadIdx.x % 64] = float(desc.opaque[threadIdx.x % 16]);
  __syncthreads();
  if (threadIdx.x < n) out[threadIdx.x] = s[63 - threadIdx.x % 64];
}
template <int N> __global__ void rt_tmpl(int* x) { x[threadIdx.x] = N; }
template __global__ void rt_tmpl<3>(int*);
"""


def _nvrtc_cubin(source: str, arch: str, *options: str) -> bytes:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    err, program = nvrtc.nvrtcCreateProgram(source.encode(), b"fixture.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    try:
        flags = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in options)]
        err, = nvrtc.nvrtcCompileProgram(program, len(flags), flags)
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
        err, size = nvrtc.nvrtcGetCUBINSize(program)
        cubin = b" " * size
        err, = nvrtc.nvrtcGetCUBIN(program, cubin)
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


@pytest.mark.parametrize("arch, variant, desc_offset", [
    ("sm_90a", "a", 48), ("sm_100f", "f", 64), ("sm_120", "", 64)])
def test_nvrtc_cubin(arch, variant, desc_offset):
    info = read_cubin(_nvrtc_cubin(NVRTC_SOURCE, arch))
    assert info.arch == arch and info.variant == variant and info.abi_version == 8
    k = kernel_of(info, "rt_kernel")
    # the bank address 0x210 + offset (sm_90) or 0x380 + offset (sm_100+) is
    # 64-byte aligned
    assert layout(k) == [(0, 0, 8), (1, desc_offset, 128), (2, desc_offset + 128, 2)]
    assert k.param_bytes == desc_offset + 130
    assert k.shared_static == 256 and k.max_threads == (128, 1, 1)
    assert k.registers > 0 and k.local == 0
    tmpl = kernel_of(info, "void rt_tmpl<3>(int*)")
    assert tmpl.name == "_Z7rt_tmplILi3EEvPi" and layout(tmpl) == [(0, 0, 8)]


def test_only_kernel_needs_no_name():
    info = read_cubin(_nvrtc_cubin(ONE_KERNEL, "sm_90"))
    assert kernel_of(info, None).name == "only"


def test_relocatable_cubin_lists_only_entry_points():
    """With -rdc a __device__ function has .text and .nv.info sections of its
    own: only STO_CUDA_ENTRY tells kernels apart (the template one is weak)."""
    source = r"""
    __device__ __noinline__ float helper(const float* in) { return in[threadIdx.x] * 2; }
    extern "C" __global__ void caller(const float* in, float* out) {
      out[threadIdx.x] = helper(in);
    }
    template <typename T> __global__ void tk(T* x) { x[0] = T(1); }
    template __global__ void tk<int>(int*);
    """
    info = read_cubin(_nvrtc_cubin(source, "sm_90", "--relocatable-device-code=true"))
    assert sorted((k.name, k.demangled) for k in info.kernels) == [
        ("_Z2tkIiEvPT_", "void tk<int>(int*)"), ("caller", None)]
    assert layout(kernel_of(info, "caller")) == [(0, 0, 8), (1, 8, 8)]


# --- Triton (its bundled ptxas: old ABI, sm_90a) --------------------------


@pytest.mark.skipif(not (TRITON / "3.6.0").is_dir(), reason="no Triton fixtures")
def test_triton_cubin():
    info = load_cubin(TRITON / "3.6.0" / "tma_copy_kernel" / "tma_copy_kernel.cubin")
    assert (info.arch, info.abi_version) == ("sm_90a", 7)
    k = kernel_of(info, None)
    assert k.required_block == (128, 1, 1)            # num_warps 4
    # CUDA 12's CUtensorMap is alignas(64): 0x210 + 48 = 0x240
    assert (k.params[0].offset, k.params[0].size) == (48, 128)
    assert k.param_bytes == 416


# --- the rest -------------------------------------------------------------


def test_render_inspect(infos):
    from rich.console import Console
    from cubinrun.cli.inspect_view import render_inspect
    console = Console(record=True, width=1000, color_system=None)   # wide: the header starts with the checkout's path
    render_inspect(infos["resources.sm_90.cubin"], console)
    text = console.export_text()
    assert "sm_90  ELF ABI 8  flags 0x6005a04  ptxas 13.0.88  8 kernels" in text
    assert "void scale<float>(float*, float, int)  _Z5scaleIfEvPT_S0_i" in text
    assert "registers 32  static shared 0 B  local 256 B  params 16 B" in text
    assert "max threads 256 x 1 x 1  required block -  cluster -  max registers 128" in text
    assert "ordinal   offset   size" in text


GLOBALS_SOURCE = """
__constant__ float d_filter[33 * 33];
__device__ int d_count;
__device__ double table[4] = {1, 2, 3, 4};
namespace ns { __constant__ float c2[8]; }
extern "C" __global__ void k(float* x) { x[0] = d_filter[3] + table[1] + ns::c2[2]; d_count++; }
"""


def test_module_globals_are_the_constant_and_device_symbols_with_sizes(capsys, tmp_path):
    from cubinrun.binary.cubin import module_globals
    from cubinrun.binary.nvrtc import compile_cuda
    from cubinrun.cli import main
    cubin = compile_cuda(GLOBALS_SOURCE, name=str(tmp_path / "g.cu"), arch="sm_90").cubin
    found = module_globals(cubin)
    assert found == {"d_filter": 4356, "d_count": 4, "table": 32, "_ZN2ns2c2E": 32}
    (tmp_path / "g.cubin").write_bytes(cubin)
    with pytest.raises(SystemExit):
        main(["inspect", str(tmp_path / "g.cubin")])
    assert ("globals: d_filter (4356 bytes), d_count (4 bytes), table (32 bytes), "
            "ns::c2 (_ZN2ns2c2E, 32 bytes)") in capsys.readouterr().out
    with pytest.raises(SpecError, match="not an ELF file"):
        module_globals(b"not a cubin")


def test_import_is_light():
    code = ("import sys, cubinrun.binary.cubin, cubinrun.cli.inspect_view; "
            "print(sorted(m for m in ('elftools', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"
