"""C++ kernels compiled on the CPU: names given to NVRTC as name expressions,
CCCL's headers from the wheel, `kernel.include`, `kernel.compiler: nvcc`, and
the sample specs in configs/cxx (dry runs for sm_90)."""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from cubinrun.binary.load import load_binary
from cubinrun.errors import BuildError, SpecError
from cubinrun.specfile import load_spec
from support.cli import run
from support.repo import REPO

CXX_CONFIGS = REPO / "configs" / "cxx"
HAVE_NVCC = shutil.which("nvcc") is not None and shutil.which("gcc") is not None

KERNELS = r'''
#include <cooperative_groups.h>
#include "scale.h"
template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce6(const T* in, T* out, unsigned int n) {
    cooperative_groups::sync(cooperative_groups::this_thread_block());
    if (threadIdx.x == 0) out[blockIdx.x] = in[0] * SCALE + (nIsPow2 ? blockSize : 0);
}
__global__ void saxpy(float a, const float* x, float* y, int n) {}
__global__ void saxpy(double a, const double* x, double* y, int n) {}
'''


@pytest.fixture(scope="module")
def kernels_dir(tmp_path_factory):
    """KERNELS and scale.h, shared by the tests of this file: the cache key holds
    the source's path, so one folder compiles each name once."""
    folder = tmp_path_factory.mktemp("cxx")
    (folder / "inc").mkdir()
    (folder / "inc" / "scale.h").write_text("#define SCALE 2\n")
    (folder / "kernels.cu").write_text(KERNELS)
    return folder


@pytest.fixture
def source_spec(kernels_dir, tmp_path):
    """A spec for KERNELS with kernel.name `name` and scale.h in kernel.include."""

    def write(name: str, signature: str = '{i: "*kfp32", o: "*fp32", n: u32}',
              extra: str = "", source: str = "kernels.cu") -> Path:
        spec = kernels_dir / f"{tmp_path.name}.yaml"
        spec.write_text(textwrap.dedent(f"""\
            kernel:
              source: {source}
              name: "{name}"
              include: [inc]
              arch: sm_90
            signature: {signature}
            vars: {{BLOCK: 256}}
            args:
              i: {{shape: [4]}}
              o: {{shape: [1]}}
              n: 4
            grid: [1]
            """).replace("args:\n", "args:\n" + extra))
        return spec
    return write


def test_a_template_instance_is_compiled_by_name_with_var_and_cccl(source_spec):
    spec = load_spec(source_spec("reduce6<float, {BLOCK}, true>"))
    assert spec.kernel.name == "reduce6<float, 256, true>"
    binary = load_binary(spec, None)
    assert binary.kernel.name == "_Z7reduce6IfLj256ELb1EEvPKT_PS0_j"
    assert Path(binary.origin).parent.name == "nvrtc"


def test_an_overload_is_compiled_by_its_signature(source_spec):
    signature = '{a: fp64, i: "*kfp64", o: "*fp64", n: i32}'
    spec = load_spec(source_spec("saxpy(double, const double*, double*, int)", signature,
                                 "  a: 1.5\n"))
    assert load_binary(spec, None).kernel.name == "_Z5saxpydPKdPdi"


def test_an_unknown_instance_is_a_spec_error_naming_the_source(source_spec, kernels_dir):
    spec = load_spec(source_spec("reduce6<float, 256>"))
    with pytest.raises(SpecError) as error:
        load_binary(spec, None)
    message = str(error.value)
    assert error.value.field == "kernel.name"
    assert message.startswith(f"kernel.name: {kernels_dir / 'kernels.cu'} has no kernel "
                              "'reduce6<float, 256>' (NVRTC: ")
    assert "saxpy(float, float const*, float*, int)" in message and "templates: reduce6" in message
    assert ".cache" not in message and "/nvrtc/" not in message


def test_a_plain_name_of_a_template_says_to_name_an_instance(source_spec):
    with pytest.raises(SpecError, match='reduce6 is a template: name an instance, such as '
                                        '"reduce6<ARGS>"'):
        load_binary(load_spec(source_spec("reduce6")), None)
    with pytest.raises(SpecError, match="'saxpy' is ambiguous in .*kernels.cu: it names saxpy"):
        load_binary(load_spec(source_spec("saxpy")), None)


def test_a_broken_source_stays_a_build_error(source_spec, kernels_dir):
    (kernels_dir / "broken.cu").write_text(KERNELS + "\nnot C++;\n")
    with pytest.raises(BuildError, match="NVRTC failed to compile"):
        load_binary(load_spec(source_spec("reduce6<float, 256, true>", source="broken.cu")), None)


def test_the_include_folder_is_part_of_the_cache_key(source_spec, kernels_dir):
    spec = load_spec(source_spec("reduce6<float, 256, true>"))
    first = load_binary(spec, None)
    header = kernels_dir / "inc" / "scale.h"
    header.write_text("#define SCALE 3\n")
    try:
        second = load_binary(spec, None)
    finally:
        header.write_text("#define SCALE 2\n")
    assert first.origin != second.origin and first.cubin != second.cubin


def test_kernel_include_must_be_a_folder(source_spec):
    spec = source_spec("saxpy")
    spec.write_text(spec.read_text().replace("include: [inc]", "include: [kernels.cu]"))
    with pytest.raises(SpecError, match=r"kernel.include\[0\]: .*kernels.cu is not a folder"):
        load_spec(spec)


def test_compile_of_a_file_with_only_templates_exits_3(capsys, tmp_path):
    source = tmp_path / "t.cu"
    source.write_text("template <int B> __global__ void k(float* x) { x[0] = B; }\n")
    code, _, err = run(capsys, "compile", source, "--arch", "sm_90")
    assert code == 3 and "compiled to no kernel" in err and "--name-expression 'k<ARGS>'" in err
    assert not (tmp_path / "t.sm_90.cubin").exists()
    code, _, err = run(capsys, "compile", source, "--arch", "sm_90", "--name-expression", "k<4>")
    assert code == 0 and "k<4> -> _Z1kILi4EEvPf" in err


def test_nvrtc_hints_at_nvcc_for_host_code(tmp_path):
    from cubinrun.binary.nvrtc import compile_cuda
    with pytest.raises(BuildError, match="kernel.compiler: nvcc"):
        compile_cuda("#include <cstdio>\nint main() { printf(\"x\"); }\n", name=str(tmp_path / "m.cu"),
                     arch="sm_90")


def test_without_nvcc_the_build_fails_with_the_fix(monkeypatch, tmp_path):
    from cubinrun.binary import nvcc
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    import cuda.pathfinder
    monkeypatch.setattr(cuda.pathfinder, "find_nvidia_binary_utility", lambda name: None)
    real_is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda self: False if str(self).startswith(
        "/usr/local/cuda") else real_is_file(self))
    with pytest.raises(BuildError, match=r"no nvcc found: pip install 'cubinrun\[nvcc\]'"):
        nvcc.find_nvcc()


@pytest.mark.skipif(not HAVE_NVCC, reason="needs nvcc and gcc")
def test_nvcc_compiles_a_whole_file_and_caches_it(capsys):
    spec = CXX_CONFIGS / "whole_file_nvcc.yaml"
    code, out, err = run(capsys, "launch", "--dry-run", "--json", "--arch", "sm_90", spec,
                         "--set", "BLOCK=128")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["kernel_mangled"] == "_Z9scale_addILi128EEvPfPKfS2_fi"
    assert plan["kernel"] == "void scale_add<128>(float*, float const*, float const*, float, int)"
    assert "/nvcc/" in plan["binary"]["origin"]
    code, _, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", spec, "--set", "BLOCK=64")
    assert code == 2 and "has no kernel 'scale_add<64>'; it has void scale_add<" in err
    assert "kernels/cxx/whole_file.cu" in err


@pytest.mark.parametrize("config", sorted(p.name for p in CXX_CONFIGS.glob("*.yaml")))
def test_every_cxx_sample_spec_dry_runs_for_sm_90(capsys, config):
    if "nvcc" in config and not HAVE_NVCC:
        pytest.skip("needs nvcc and gcc")
    code, out, err = run(capsys, "launch", "--dry-run", "--json", "--arch", "sm_90",
                         CXX_CONFIGS / config)
    assert code == 0, err


def test_init_from_a_cu_names_the_instance_and_types_from_the_cxx_signature(capsys, tmp_path):
    source = REPO / "kernels" / "cxx" / "axpy.cu"
    spec = tmp_path / "axpy.yaml"
    code, _, err = run(capsys, "init", source, "--kernel", "axpy(double, const double*, double*, int)",
                       "--arch", "sm_90", "-o", spec)
    assert code == 0, err
    text = spec.read_text()
    assert "  source: " in text and 'name: "axpy(double, const double*, double*, int)"' in text
    # the names are the source's, of the overload that was named
    assert 'a: fp64' in text and 'x: "*kfp64"   # C++ double const*' in text and "guess" not in text
    code, _, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", spec)
    assert code == 0, err
    code, _, err = run(capsys, "init", source, "--arch", "sm_90")
    assert code == 2 and "holds 3 kernels (scale(float, float*, int), axpy(double, " in err


def test_nvcc_options_cannot_change_the_target_or_output():
    from cubinrun.binary.nvcc import nvcc_command
    from cubinrun.errors import UsageError
    command = nvcc_command("nvcc", Path("k.cu"), Path("k.cubin"), arch="sm_90",
                           options=["-O3", "-Dblock=4", "-lineinfo"], include_dirs=["inc"])
    assert command[:3] == ["nvcc", "-cubin", "-arch=sm_90"]
    assert command[-2:] == ["-o", "k.cubin"] and f"-I{Path('inc').resolve()}" in command
    for option in ("-arch=sm_80", "-o", "--gpu-architecture=sm_80", "-gencode", "-ptx"):
        with pytest.raises(UsageError, match="cubinrun chooses nvcc's target"):
            nvcc_command("nvcc", Path("k.cu"), Path("k.cubin"), arch="sm_90", options=[option])


def test_results_name_a_cxx_kernel_as_written_and_by_symbol(capsys, tmp_path):
    import xml.etree.ElementTree as ET
    junit, jsonl = tmp_path / "j.xml", tmp_path / "r.jsonl"
    code, _, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90",
                       CXX_CONFIGS / "axpy_fp64.yaml", "--junit", junit, "--jsonl", jsonl)
    assert code == 0, err
    result = json.loads(jsonl.read_text())
    assert (result["kernel"], result["kernel_mangled"]) == (
        "axpy(double, double const*, double*, int)", "_Z4axpydPKdPdi")
    case = ET.parse(junit).getroot().find("testsuite/testcase")
    assert case.get("name") == "axpy(double, double const*, double*, int)"
