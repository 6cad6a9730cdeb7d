"""The spec's types against the kernel's C++ declaration (issue 38): from the
demangled symbol of a C++ kernel, from the source's declaration of an
extern "C" one; bytes (`*u8`) and `kernel.reinterpret` say a reinterpretation
is meant."""
from __future__ import annotations

import textwrap

import pytest

from cubinrun.binary.declared_types import declared_in_source, spec_type

from support.cli import error_line, run as cli

SOURCE = """\
// transpose through shared memory; out and in are float
__global__ void transpose(float* out, const float* in, int width, int height)
{
    __shared__ float tile[32][33];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x][threadIdx.y] + width + height;
}

extern "C" __global__ void scale(float* x, /* a comment */ unsigned n);
extern "C" __global__ void scale(float* x, unsigned n) { x[n] *= 2.0f; }
"""

SPEC = """\
kernel:
  source: k.cu
  name: transpose
  arch: sm_90
signature:
  out: "*fp32"
  in: "*kfp32"
  width: i32
  height: i32
args:
  out: {shape: [1024]}
  in: {shape: [1024], init: random}
  width: 32
  height: 32
grid: [1]
block: [32, 32]
"""


@pytest.fixture
def written(tmp_path):
    (tmp_path / "k.cu").write_text(SOURCE)

    def write(text: str):
        path = tmp_path / "s.yaml"
        path.write_text(text)
        return path
    return write


def test_types_that_agree_with_the_declaration_dry_run(capsys, written):
    code, _, err = cli(capsys, "launch", "--dry-run", written(SPEC))
    assert code == 0, err


@pytest.mark.parametrize("old, new, line, message", [
    ("width: i32", "width: fp32", 8, "signature.width: fp32 contradicts parameter 2 of "
     "transpose(float*, float const*, int, int), which C++ declares `int`: write i32, or list "
     "width in kernel.reinterpret if fp32 is meant"),
    ('out: "*fp32"', 'out: "*fp16"', 6, "signature.out: *fp16 contradicts parameter 0 of "
     "transpose(float*, float const*, int, int), which C++ declares `float*`: write *fp32 (or "
     "*u8 for its bytes), or list out in kernel.reinterpret if *fp16 is meant"),
    ('in: "*kfp32"', 'in: "*ki32"', 7, "signature.in: *ki32 contradicts parameter 1 of "
     "transpose(float*, float const*, int, int), which C++ declares `float const*`: write "
     "*kfp32"),
])
def test_a_type_the_declaration_contradicts_names_both_and_the_line(capsys, written, old, new,
                                                                    line, message):
    got = error_line(capsys, "launch", "--dry-run", written(SPEC.replace(old, new)))
    assert got.startswith("error: ") and f"s.yaml:{line}: {message}" in got


@pytest.mark.parametrize("old, new", [
    ('out: "*fp32"', 'out: "*u8"'),                                   # its bytes
    ("  arch: sm_90\n", "  arch: sm_90\n  reinterpret: [out]\n"),     # meant
])
def test_bytes_and_reinterpret_say_it_is_meant(capsys, written, old, new):
    text = SPEC.replace(old, new)
    if "reinterpret" in new:
        text = text.replace('out: "*fp32"', 'out: "*fp16"')
    code, _, err = cli(capsys, "launch", "--dry-run", written(text))
    assert code == 0, err


def test_reinterpret_names_only_parameters(capsys, written):
    text = SPEC.replace("  arch: sm_90\n", "  arch: sm_90\n  reinterpret: [output]\n")
    assert error_line(capsys, "launch", "--dry-run", written(text)).endswith(
        "s.yaml:5: kernel.reinterpret: 'output' is not a parameter of the signature "
        "(height, in, out, width)")


def test_an_extern_c_kernels_types_come_from_its_source(capsys, written):
    text = textwrap.dedent("""\
        kernel: {source: k.cu, name: scale, arch: sm_90}
        signature: {x: "*fp32", n: i32}
        args: {x: {shape: [64]}, n: 3}
        grid: [1]
        block: [32]
        """)
    assert error_line(capsys, "launch", "--dry-run", written(text)).endswith(
        "s.yaml:2: signature.n: i32 contradicts parameter 1 of scale, which C++ declares "
        "`unsigned int`: write u32, or list n in kernel.reinterpret if i32 is meant")
    code, _, err = cli(capsys, "launch", "--dry-run", written(text.replace("n: i32", "n: u32")))
    assert code == 0, err


def test_declarations_read_from_a_source(tmp_path):
    source = tmp_path / "k.cu"
    source.write_text(SOURCE + textwrap.dedent("""\
        __global__ void twice(int* a) {}
        __global__ void twice(float* a, int n) {}
        void host(int);
        void launch() { transpose<<<1, 1>>>(0, 0, 1, 1); }
        """))
    assert declared_in_source(source, "scale") == [("float*", "x"), ("unsigned int", "n")]
    assert declared_in_source(source, "transpose") == [
        ("float*", "out"), ("float const*", "in"), ("int", "width"), ("int", "height")]
    assert declared_in_source(source, "twice") is None                  # which one?
    assert declared_in_source(source, "twice", ["float*", "int"]) == [("float*", "a"),
                                                                       ("int", "n")]
    assert declared_in_source(source, "host") is None                   # not a kernel
    assert declared_in_source(tmp_path / "none.cu", "scale") is None


@pytest.mark.parametrize("cxx, spec", [
    ("float const*", "*kfp32"), ("unsigned int", "u32"), ("__nv_bfloat16*", "*bf16"),
    ("float4*", None), ("Params", None),
])
def test_the_spec_type_of_a_cxx_type(cxx, spec):
    assert spec_type(cxx) == spec


def test_long_may_be_either_size_the_host_compiler_gives_it():
    from cubinrun.binary.declared_types import _agrees
    assert _agrees("i32", "long") and _agrees("i64", "long") and _agrees("u32", "unsigned long")
    assert not _agrees("fp32", "long") and not _agrees("u32", "int")
