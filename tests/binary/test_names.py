"""Kernel names as written in C++ against the spellings demanglers give
(binary/names.py): no compiler needed."""
from __future__ import annotations

import pytest

from cubinrun.binary.cubin import KernelInfo, demangle
from cubinrun.binary.names import (declared_templates, find_kernel, name_expression,
                                   parse_name)
from cubinrun.errors import SpecError


def kernel(symbol: str, demangled: str | None = None) -> KernelInfo:
    return KernelInfo(name=symbol, demangled=demangled, params=[], param_bytes=0,
                      registers=None, shared_static=0, local=None, max_threads=None,
                      required_block=None, cluster=None, max_registers=None)


# reduce6<float, 256, true> as c++filt and as cpp-demangle print it, and its
# neighbours in a cubin that nvcc filled with instances (cuda-samples' reduction).
REDUCE6_CXXFILT = kernel("_Z7reduce6IfLj256ELb1EEvPKT_PS0_j",
                         "void reduce6<float, 256u, true>(float const*, float*, unsigned int)")
REDUCE6_CPP_DEMANGLE = kernel("_Z7reduce6IfLj256ELb1EEvPKT_PS0_j",
                              "void reduce6<float, (unsigned int)256, true>(float const*, "
                              "float*, unsigned int)")
NEIGHBOURS = [
    kernel("_Z7reduce6IfLj128ELb1EEvPKT_PS0_j",
           "void reduce6<float, (unsigned int)128, true>(float const*, float*, unsigned int)"),
    kernel("_Z7reduce6IfLj256ELb0EEvPKT_PS0_j",
           "void reduce6<float, (unsigned int)256, false>(float const*, float*, unsigned int)"),
    kernel("_Z7reduce6IiLj256ELb1EEvPKT_PS0_j",
           "void reduce6<int, (unsigned int)256, true>(int const*, int*, unsigned int)"),
]
SAXPY_F = kernel("_Z5saxpyfPKfPfi", "saxpy(float, float const*, float*, int)")
SAXPY_D = kernel("_Z5saxpydPKdPdi", "saxpy(double, double const*, double*, int)")
EXTERN_C = kernel("add_kernel")


@pytest.mark.parametrize("spelled", [REDUCE6_CXXFILT, REDUCE6_CPP_DEMANGLE])
def test_a_template_instance_matches_either_demanglers_spelling(spelled):
    kernels = [*NEIGHBOURS, spelled]
    for written in ("reduce6<float, 256, true>", "reduce6<float,256,true>",
                    "reduce6<float, 256u, true>", "reduce6<float, (unsigned int)256, true>",
                    "reduce6<float, 256, true>(const float*, float*, unsigned int)",
                    "reduce6<float, 256, true>(const float* __restrict__ in, float* out, "
                    "unsigned n)"):
        assert find_kernel(kernels, written, "reduction_kernel.cu") is spelled, written


def test_the_demanglers_really_spell_it_so():
    # cpp-demangle is the dependency; c++filt's spelling is the fallback's (libstdc++)
    assert demangle(REDUCE6_CXXFILT.name) in (REDUCE6_CXXFILT.demangled,
                                              REDUCE6_CPP_DEMANGLE.demangled)


def test_a_plain_name_must_be_unique_once_demangled():
    assert find_kernel([SAXPY_F, EXTERN_C], "saxpy", "k.cu") is SAXPY_F
    assert find_kernel([SAXPY_F, EXTERN_C], "add_kernel", "k.cu") is EXTERN_C
    with pytest.raises(SpecError) as error:
        find_kernel([SAXPY_F, SAXPY_D, EXTERN_C], "saxpy", "saxpy.cu")
    message = str(error.value)
    assert message.startswith("'saxpy' is ambiguous in saxpy.cu: it names ")
    assert "saxpy(float, float const*, float*, int)" in message
    assert "saxpy(double, double const*, double*, int)" in message
    assert "add_kernel" not in message


def test_an_overload_is_picked_by_its_full_signature():
    kernels = [SAXPY_F, SAXPY_D]
    assert find_kernel(kernels, "saxpy(float, float const*, float*, int)", "k.cu") is SAXPY_F
    assert find_kernel(kernels, "saxpy(double a, const double *x, double *y, const int n)",
                       "k.cu") is SAXPY_D
    assert find_kernel(kernels, "_Z5saxpydPKdPdi", "k.cu") is SAXPY_D     # mangled still works


def test_many_instances_of_a_template_are_ambiguous_by_plain_name():
    with pytest.raises(SpecError, match="'reduce6' is ambiguous in r.cu: it names void reduce6"):
        find_kernel([*NEIGHBOURS, REDUCE6_CPP_DEMANGLE], "reduce6", "r.cu")


def test_an_unknown_name_lists_the_candidates_demangled_naming_the_source():
    with pytest.raises(SpecError) as error:
        find_kernel([*NEIGHBOURS], "reduce6<float, 512, true>", "samples/reduction_kernel.cu")
    message = str(error.value)
    assert message.startswith("samples/reduction_kernel.cu has no kernel "
                              "'reduce6<float, 512, true>'; it has void reduce6<float, ")
    assert "_Z7" not in message
    with pytest.raises(SpecError, match="k.cu has no kernel 'nope'; it has saxpy"):
        find_kernel([SAXPY_F], "nope", "k.cu")
    with pytest.raises(SpecError, match="it has none; a template kernel is compiled only when"):
        find_kernel([], "MatrixMulCUDA<32>", "matrixMul.cu")


def test_the_candidate_list_is_bounded():
    many = [kernel(f"k{i}") for i in range(1000)]
    with pytest.raises(SpecError) as error:
        find_kernel(many, "nope", "k.cu")
    assert "and 988 more" in str(error.value) and len(str(error.value)) < 800


@pytest.mark.parametrize("written, canonical", [
    ("MatrixMulCUDA<32>", ("MatrixMulCUDA", "32", None)),
    ("void ns::foo<float>(float*)", ("ns::foo", "float", "float*")),
    ("void foo<-1, (char)65, (bool)1>()", ("foo", "-1,65,true", "")),
    ("f(void)", ("f", None, "")),
    ("g(unsigned, long int, const float* const p, cub::Sum op)",
     ("g", None, "unsigned int,long,float const*,cub::Sum")),
    ("h<4ul, 0x10>", ("h", "4,0x10", None)),
])
def test_canonical_spelling(written, canonical):
    parsed = parse_name(written)
    assert (parsed.base, parsed.template, parsed.params) == canonical


@pytest.mark.parametrize("bad", ["", "()", "<int>", "f(", "a b c <", "f<int", "`"])
def test_what_is_not_a_name(bad):
    assert parse_name(bad) is None


def test_name_expressions_for_nvrtc():
    assert name_expression("matmul_kernel") is None                    # compiled anyway
    assert name_expression("_Z13matmul_kernelPfS_S_") is None
    assert name_expression("MatrixMulCUDA<32>") == "MatrixMulCUDA<32>"
    assert name_expression("reduce6<float, 256, true>") == "reduce6<float,256,true>"
    assert (name_expression("saxpy(float, const float*, float*, int)")
            == "(void(*)(float,const float*,float*,int))saxpy")
    assert (name_expression("void ns::k<int>(int*)") == "(void(*)(int*))ns::k<int>")


def test_declared_templates_are_found_for_hints():
    source = b"""
    template <int BLOCK_SIZE> __global__ void MatrixMulCUDA(float *C) {}
    template <class T, unsigned int blockSize, bool nIsPow2>
    __global__ void __launch_bounds__(256) reduce6(T *g_idata) {}
    __global__ void plain(int) {}
    """
    assert declared_templates(source) == ["MatrixMulCUDA", "reduce6"]


def test_init_spells_the_shortest_name_that_picks_the_kernel():
    from cubinrun.binary.names import spelled_name
    many = [*NEIGHBOURS, REDUCE6_CPP_DEMANGLE, SAXPY_F, SAXPY_D, EXTERN_C,
            kernel("_Z13matmul_kernelPfS_S_", "matmul_kernel(float*, float*, float*)")]
    assert spelled_name(REDUCE6_CPP_DEMANGLE, many) == "reduce6<float, 256, true>"
    assert spelled_name(SAXPY_D, many) == "saxpy(double, double const*, double*, int)"
    assert spelled_name(many[-1], many) == "matmul_kernel"
    assert spelled_name(EXTERN_C, many) == "add_kernel"
    for each in many:
        assert find_kernel(many, spelled_name(each, many), "k.cu") is each


def test_tool_filters_match_every_symbol_a_name_may_become():
    import re

    from cubinrun.binary.names import symbol_pattern, symbol_substring
    for name, symbols in [("matmul_kernel", ["_Z13matmul_kernelPfS_S_", "matmul_kernel"]),
                          ("reduce6<float, 256, true>", [REDUCE6_CXXFILT.name]),
                          ("saxpy(float, const float*, float*, int)", [SAXPY_F.name]),
                          ("ns::kernel", ["_ZN2ns6kernelEv"]),
                          ("_Z5saxpydPKdPdi", [SAXPY_D.name])]:
        for symbol in symbols:
            assert re.match(symbol_pattern(name), symbol), (name, symbol)
            assert symbol_substring(name) in symbol
    assert not re.match(symbol_pattern("add"), "add_kernel")
    assert not re.match(symbol_pattern("add"), "_Z10add_kernelPf")


def test_a_resource_limit_names_a_cxx_kernel_demangled():
    from cubinrun.binary.resource_limits import ptxas_limit
    log = ("ptxas error   : Entry function '_Z13matmul_kernelPfS_S_' uses too much shared data "
           "(0x14000 bytes, 0xc000 max)")
    assert ptxas_limit(log) == ("matmul_kernel(float*, float*, float*) needs 81920 bytes of "
                                "shared data, more than the 49152 the target allows")
