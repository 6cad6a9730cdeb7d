"""NVRTC and nvJitLink compiles for sm_90 on a machine with no GPU, and the
compile cache."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from cubinrun.binary import nvrtc as nv
from cubinrun.cache.folders import cache_root
from cubinrun.errors import BuildError, UsageError
from support.platforms import skip_on_windows

ADD_ONE = 'extern "C" __global__ void add_one(float* x) { x[threadIdx.x] += 1.0f; }\n'


def elf_machine(cubin: bytes) -> int:
    assert cubin[:4] == b"\x7fELF"
    return struct.unpack_from("<H", cubin, 18)[0]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def nvrtc_ptx(source: str, arch: str = "compute_90") -> bytes:
    """PTX from NVRTC with a virtual arch (what compile_cuda refuses to hand out)."""
    from cuda.bindings import nvrtc
    _, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"k.cu", 0, [], [])
    (result,) = nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture={arch}".encode()])
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = bytearray(size)
    nvrtc.nvrtcGetPTX(prog, ptx)
    nvrtc.nvrtcDestroyProgram(prog)
    return bytes(ptx).rstrip(b"\0")


def have_nvjitlink() -> bool:
    try:
        nv.nvjitlink_version()
    except BuildError:
        return False
    return True


needs_nvjitlink = pytest.mark.skipif(not have_nvjitlink(),
                                     reason="nvJitLink missing: pip install nvidia-nvjitlink")


# --- arch strings --------------------------------------------------------


def test_parse_arch_and_capability():
    assert nv.parse_arch("sm_90") == (90, "")
    assert nv.parse_arch("sm_90a") == (90, "a")
    assert nv.parse_arch("sm_100f") == (100, "f")
    assert nv.arch_for_capability(9, 0) == "sm_90"
    assert nv.arch_for_capability(12, 1) == "sm_121"


@pytest.mark.parametrize("arch, message", [
    ("compute_90", "compute_90 is a virtual architecture .* such as sm_90"),
    ("sm90", "invalid arch 'sm90': expected sm_XX"),
    ("sm_89a", "'a' variants start at sm_90"),
    ("sm_90f", "'f' variants start at sm_100"),
])
def test_bad_arch_is_a_usage_error(arch, message):
    with pytest.raises(UsageError, match=message):
        nv.parse_arch(arch)
    with pytest.raises(UsageError, match=message):
        nv.compile_cuda(ADD_ONE, name="k.cu", arch=arch)


def test_arch_nvrtc_does_not_know():
    with pytest.raises(UsageError, match=r"sm_50 is not supported by NVRTC \d+\.\d+; "
                                         r"it supports .*sm_90"):
        nv.compile_cuda(ADD_ONE, name="k.cu", arch="sm_50")
    with pytest.raises(UsageError, match="give the arch through --arch"):
        nv.compile_cuda(ADD_ONE, name="k.cu", arch="sm_90", options=["-arch=sm_80"])


# --- NVRTC ---------------------------------------------------------------


def test_compiles_a_cubin_for_sm_90():
    result = nv.compile_cuda(ADD_ONE, name="kernels/add.cu", arch="sm_90")
    assert elf_machine(result.cubin) == 190
    assert len(result.cubin) > 1000 and b"add_one" in result.cubin
    assert result.arch == "sm_90" and result.lowered_names == {} and result.log == ""


def test_defines_change_the_cubin():
    source = ('#ifndef SUFFIX\n#error SUFFIX is required\n#endif\n'
              '#define CAT2(a, b) a##b\n#define CAT(a, b) CAT2(a, b)\n'
              'extern "C" __global__ void CAT(scale_, SUFFIX)(float* x) {\n'
              '#ifdef DOUBLE_IT\n  x[0] *= 2.0f;\n#endif\n}\n')
    plain = nv.compile_cuda(source, name="k.cu", arch="sm_90", defines={"SUFFIX": "fast"})
    doubled = nv.compile_cuda(source, name="k.cu", arch="sm_90",
                              defines={"SUFFIX": "fast", "DOUBLE_IT": None})
    assert b"scale_fast" in plain.cubin and b"scale_fast" in doubled.cubin
    assert plain.cubin != doubled.cubin
    with pytest.raises(BuildError, match="k.cu for sm_90: 1 catastrophic error") as info:
        nv.compile_cuda(source, name="k.cu", arch="sm_90")
    assert "SUFFIX is required" in info.value.log


def test_include_dirs_source_folder_and_cuda_headers(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "params.h").write_text("#define BLOCK 128\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "local.h").write_text("#define SCALE 3.0f\n")
    source = ('#include <cuda_fp16.h>\n#include "params.h"\n#include "local.h"\n'
              'extern "C" __global__ void __launch_bounds__(BLOCK) k(__half* x) {\n'
              '  x[threadIdx.x] = __float2half(SCALE);\n}\n')
    name = str(tmp_path / "src" / "k.cu")
    result = nv.compile_cuda(source, name=name, arch="sm_90", include_dirs=[tmp_path / "inc"])
    assert elf_machine(result.cubin) == 190
    with pytest.raises(BuildError, match=r"NVRTC failed to compile .*k\.cu for sm_90") as info:
        nv.compile_cuda(source, name=name, arch="sm_90")
    assert 'cannot open source file "params.h"' in info.value.log


def test_template_kernel_lowered_names():
    source = ("template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\n"
              "template __global__ void scale<int>(int*, int);\n")
    result = nv.compile_cuda(source, name="t.cu", arch="sm_90a",
                             name_expressions=["scale<float>", "scale<double>"])
    assert result.lowered_names == {"scale<float>": "_Z5scaleIfEvPT_S0_",
                                    "scale<double>": "_Z5scaleIdEvPT_S0_"}
    for symbol in result.lowered_names.values():
        assert symbol.encode() in result.cubin


def test_syntax_error_is_a_build_error_with_the_log():
    source = "__global__ void broken(float* x) {\n  x[0] = 1.0f\n  return;\n}\n"
    with pytest.raises(BuildError) as info:
        nv.compile_cuda(source, name="kernels/x.cu", arch="sm_90")
    assert str(info.value) == ('NVRTC failed to compile kernels/x.cu for sm_90: 1 error: '
                               'kernels/x.cu:3: expected a ";"')
    assert "kernels/x.cu(3): error: expected a \";\"" in info.value.log
    assert info.value.exit_code == 3


def test_cub_whole_header_says_the_error_and_the_way_out(capsys, tmp_path):
    """CCCL's own #error for <cub/cub.cuh> under NVRTC, for real: the one line
    quotes it (the header as included, not its install path) and the fix."""
    skip_on_windows("CCCL's headers under NVRTC on Windows stop earlier, at thrust's host-only "
                    "launch, before cub.cuh's own #error (that first diagnostic is shown)")
    from cubinrun.binary.includes import toolkit_include_dirs
    from cubinrun.cli import main
    if not any(Path(folder, "cub", "cub.cuh").is_file() for folder in toolkit_include_dirs()):
        pytest.skip("needs CCCL's headers (nvidia-cuda-cccl)")
    source = tmp_path / "expdist.cu"
    source.write_text('#include <cub/cub.cuh>\n'
                      'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n')
    with pytest.raises(SystemExit) as done:
        main(["compile", str(source), "--arch", "sm_90", "-o", str(tmp_path / "k.cubin")])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert done.value.code == 3
    assert re.fullmatch(
        rf"error: NVRTC failed to compile {re.escape(str(source))} for sm_90: 1 catastrophic "
        r"error: <cub/cub\.cuh>:\d+: #error directive: \"Including <cub/cub\.cuh> is not "
        r"supported when compiling with NVRTC\..* \(the way out: include the specific header "
        r"<cub/cub\.cuh> stands for, or compile with `kernel\.compiler: nvcc`, the nvcc extra: "
        r"pip install 'cubinrun\[nvcc\]'\)", line), line


@pytest.mark.parametrize("log, first", [
    ('k.cu(3): warning #177-D: variable "y" was declared but never referenced\n'
     'k.cu(4): error: identifier "z" is undefined\n\n1 error detected in "k.cu".',
     'k.cu:4: identifier "z" is undefined'),
    ("In file included from k.cu:1:\n/usr/include/h.h:12:5: error: 'f' was not declared",
     "/usr/include/h.h:12: 'f' was not declared"),
    ("ptxas error   : Entry function 'k' uses too much shared data (0x10000 bytes)",
     "Entry function 'k' uses too much shared data (0x10000 bytes)"),
    ("nvcc fatal   : Unsupported gpu architecture 'compute_5'",
     "Unsupported gpu architecture 'compute_5'"),
    ("a warning only", None),
])
def test_the_first_diagnostic_of_nvrtc_nvcc_gcc_and_ptxas(log, first):
    from cubinrun.binary.diagnostics import first_diagnostic
    assert first_diagnostic(log) == first


def test_missing_nvrtc_says_what_to_install(monkeypatch):
    from cuda.bindings import nvrtc
    from cuda.pathfinder import DynamicLibNotFoundError

    def absent():
        raise DynamicLibNotFoundError('Failure finding "libnvrtc.so.13"')
    monkeypatch.setattr(nvrtc, "nvrtcVersion", absent)
    with pytest.raises(BuildError, match="NVRTC is not available: pip install "
                                         "nvidia-cuda-nvrtc .*libnvrtc.so.13"):
        nv.compile_cuda(ADD_ONE, name="k.cu", arch="sm_90")


# --- the cache -----------------------------------------------------------


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    skip_on_windows("XDG_CACHE_HOME is not used on Windows (%LOCALAPPDATA% is)")
    monkeypatch.delenv("CUBINRUN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "cubinrun"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "cubinrun"
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"


def test_cached_compile_hits_the_second_time(cache_dir):
    source = "template <typename T> __global__ void fill(T* x) { x[threadIdx.x] = T(7); }\n"
    kwargs = dict(name="fill.cu", arch="sm_90", name_expressions=["fill<float>"])
    first = nv.cached_compile(source, **kwargs)
    second = nv.cached_compile(source, **kwargs)
    assert (first.hit, second.hit) == (False, True)
    assert first.path == second.path and first.path.parent == cache_dir / "nvrtc"
    assert first.path.read_bytes() == second.compiled.cubin == first.compiled.cubin
    assert second.compiled.lowered_names == {"fill<float>": "_Z4fillIfEvPT_"}
    assert sorted(p.suffix for p in first.path.parent.iterdir()) == [".cubin", ".json"]

    again = nv.cached_compile(source, **kwargs, refresh=True)
    assert not again.hit and again.path == first.path


def test_cache_key_covers_every_input(cache_dir):
    base = dict(name="k.cu", arch="sm_90")
    paths = {nv.cached_compile(ADD_ONE, **base).path,
             nv.cached_compile(ADD_ONE, **base, options=["-lineinfo"]).path,
             nv.cached_compile(ADD_ONE, **base, defines={"X": "1"}).path,
             nv.cached_compile(ADD_ONE, name="k.cu", arch="sm_90a").path,
             nv.cached_compile(ADD_ONE + "\n", **base).path}
    assert len(paths) == 5
    assert not nv.cached_compile(ADD_ONE, **base, options=["--use_fast_math"]).hit


def test_failed_compile_is_not_cached(cache_dir):
    with pytest.raises(BuildError):
        nv.cached_compile("oops", name="k.cu", arch="sm_90")
    assert not (cache_dir / "nvrtc").exists() or not any((cache_dir / "nvrtc").iterdir())


# --- PTX through nvJitLink -----------------------------------------------


@needs_nvjitlink
def test_ptx_to_cubin_and_cache(cache_dir):
    ptx = nvrtc_ptx(ADD_ONE)
    assert b".entry add_one" in ptx
    cubin = nv.compile_ptx(ptx, arch="sm_90")
    assert elf_machine(cubin) == 190 and b"add_one" in cubin
    assert elf_machine(nv.compile_ptx(ptx.decode(), arch="sm_90a")) == 190

    first = nv.cached_compile_ptx(ptx, arch="sm_90")
    second = nv.cached_compile_ptx(ptx, arch="sm_90")
    assert (first.hit, second.hit) == (False, True)
    assert first.path.parent == cache_dir / "nvjitlink"
    assert second.compiled.cubin == first.compiled.cubin


@needs_nvjitlink
def test_bad_ptx_is_a_build_error_with_the_log():
    ptx = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry f() { ret }\n"
    with pytest.raises(BuildError, match=r"nvJitLink failed to compile f\.ptx for sm_90: "
                                         r".*line 4.*syntax error") as info:
        nv.compile_ptx(ptx, arch="sm_90", name="f.ptx")
    assert "Ptx assembly aborted" in info.value.log
    with pytest.raises(UsageError, match="sm_91 is not supported by nvJitLink"):
        nv.compile_ptx(ptx, arch="sm_91")
    # Triton writes `.target sm_90a`: such PTX is for sm_90a only.
    arch_specific = nvrtc_ptx(ADD_ONE, arch="compute_90a")
    with pytest.raises(BuildError, match="PTX with .target 'sm_90a' cannot be compiled "
                                         "for architecture 'sm_90'"):
        nv.compile_ptx(arch_specific, arch="sm_90")
    assert elf_machine(nv.compile_ptx(arch_specific, arch="sm_90a")) == 190


def test_missing_nvjitlink_says_what_to_install(monkeypatch):
    from cuda.bindings import nvjitlink
    from cuda.pathfinder import DynamicLibNotFoundError

    def absent():
        raise DynamicLibNotFoundError('Failure finding "libnvJitLink.so.13"')
    monkeypatch.setattr(nvjitlink, "version", absent)
    with pytest.raises(BuildError, match="pip install nvidia-nvjitlink"):
        nv.compile_ptx(b"", arch="sm_90")


def test_editing_an_included_header_compiles_again(cache_dir, tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "value.h").write_text("#define VALUE 3\n")
    (tmp_path / "local.h").write_text('#include <value.h>\n')
    source = ('#include "local.h"\n'
              'extern "C" __global__ void k(int *x) { x[0] = VALUE; }\n')
    kwargs = dict(name=str(tmp_path / "k.cu"), arch="sm_90",
                  options=[f"-I{tmp_path / 'inc'}"])
    first = nv.cached_compile(source, **kwargs)
    assert not first.hit and nv.cached_compile(source, **kwargs).hit
    (tmp_path / "inc" / "value.h").write_text("#define VALUE 4\n")   # two includes deep
    edited = nv.cached_compile(source, **kwargs)
    assert not edited.hit and edited.compiled.cubin != first.compiled.cubin
