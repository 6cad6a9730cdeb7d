"""Spec loading: the docs/spec.md example, every section's forms, and the errors a
user can cause, each naming the field and the line."""
import math

import numpy as np
import pytest

from cubinrun.errors import SpecError
from cubinrun.specfile import (
    BufferRef, ConstArg, DescArg, ScalarArg, TupleArg, load_spec, parse_overrides)
from support.repo import REPO

EXAMPLE = """\
kernel:
  cubin: k.cubin
  name: add_kernel
signature:              # one entry per kernel parameter, in order
  x: "*fp32"
  y: "*fp32"
  out: "*fp32"
  n: i32
vars:
  N: 1048576
  BLOCK: 1024
args:
  x: {shape: [N], init: random}
  y: {shape: [N], init: {random: normal, seed: 7}}
  out: {shape: [N], init: zeros}
  n: N
grid: [cdiv(N, BLOCK)]
launch:
  num_warps: 4
check:
  out: {expect: x + y, rtol: 1e-6}
bench:
  bytes: 12 * N
"""


def spec_error(write_spec, text, overrides=None) -> SpecError:
    path = write_spec(text)
    with pytest.raises(SpecError) as err:
        load_spec(path, overrides)
    assert err.value.file == str(path)
    return err.value


def test_the_spec_md_example(write_spec):
    path = write_spec(EXAMPLE)
    spec = load_spec(path)
    assert spec.kernel.kind == "cubin" and spec.kernel.path == path.parent / "k.cubin"
    assert spec.kernel.name == "add_kernel"
    assert spec.grid == (1024, 1, 1) and spec.block == (128, 1, 1)
    assert spec.vars == {"N": 1048576, "BLOCK": 1024} and spec.scalars == {"n": 1048576}
    assert [type(a) for a in spec.args] == [BufferRef, BufferRef, BufferRef, ScalarArg]
    x, y = spec.buffers["x"], spec.buffers["y"]
    assert x.shape == (1048576,) and x.dtype.name == "fp32" and x.nbytes == 4 * 1048576
    assert x.init.kind == "random" and x.init.distribution == "uniform"
    assert y.init.distribution == "normal" and y.init.seed == 7
    (check,) = spec.checks
    assert check.output == "out" and check.rtol == 1e-6 and check.expect.names == {"x", "y"}
    assert spec.bench.bytes == 12 * 1048576 and spec.bench.l2 == "cold"


def test_set_overrides_vars_everywhere(write_spec):
    spec = load_spec(write_spec(EXAMPLE), parse_overrides(["N=2**12", "BLOCK=256"]))
    assert spec.grid == (16, 1, 1) and spec.scalars["n"] == 4096
    assert spec.buffers["out"].shape == (4096,) and spec.bench.bytes == 12 * 4096


def test_set_errors(write_spec):
    err = spec_error(write_spec, EXAMPLE, parse_overrides(["M=3"]))
    assert "--set M: no such var (vars: N, BLOCK)" in str(err)
    with pytest.raises(SpecError, match="NAME=VALUE"):
        parse_overrides(["N"])
    err = spec_error(write_spec, EXAMPLE, {"N": "2**9999"})
    assert "--set N" in str(err) and "too large" in str(err)


def test_errors_name_file_field_and_line(write_spec):
    err = spec_error(write_spec, EXAMPLE.replace("n: N\n", "n: 2**40\n"))
    assert err.field == "args.n" and err.line == 16
    assert str(err).endswith("spec.yaml:16: args.n: 1099511627776 is out of range for i32 "
                             "[-2147483648, 2147483647]")


@pytest.mark.parametrize("edit, field, fragment", [
    (("cubin: k.cubin", "cubin: missing.cubin"), "kernel.cubin", "no such file"),
    (("  name: add_kernel\n", "  name: add_kernel\n  ptx: k.cubin\n"), "kernel", "exactly one of"),
    (("  name: add_kernel\n", "  nmae: x\n"), "kernel.nmae", "unknown key 'nmae'"),
    (('  x: "*fp32"', '  x: "*fp33"'), "signature.x", "unknown pointee type"),
    (("  x: {shape: [N], init: random}\n", ""), "args.x", "missing entry for parameter 'x'"),
    (("  n: N\n", ""), "args.n", "missing value for scalar parameter 'n'"),
    (("  n: N\n", "  n: N\n  m: 1\n"), "args.m", "unknown key 'm'"),
    (("  n: N\n", "  n: N / 2\n"), "args.n", "i32 needs an integer, got 524288.0"),
    (("init: random}", "init: rand}"), "args.x.init", "unknown init 'rand'"),
    (("[N], init: random", "[N, -1], init: random"), "args.x.shape[1]", "must be >= 0"),
    (("[N], init: random", "[N], dtype: f32, init: random"), "args.x.dtype", "unknown dtype"),
    (("grid: [cdiv(N, BLOCK)]", "grid: [1, 70000]"), "grid[1]", "exceed the grid limit 65535"),
    (("grid: [cdiv(N, BLOCK)]", "grid: [-1]"), "grid[0]", "must be >= 0"),
    (("grid: [cdiv(N, BLOCK)]", "grid: [1, 2, 3, 4]"), "grid", "1 to 3 dimensions"),
    (("grid: [cdiv(N, BLOCK)]", "grid: [N / 3]"), "grid[0]", "must be an integer"),
    (("grid: [cdiv(N, BLOCK)]", "grid: [cdiv(N, BLCK)]"), "grid[0]", "unknown name 'BLCK'"),
    (("grid: [cdiv(N, BLOCK)]\n", ""), "grid", "missing required section 'grid'"),
    (("  num_warps: 4", "  num_warps: 0"), "launch.num_warps", "must be >= 1"),
    (("  num_warps: 4", "  num_warps: 4\n  shared: -1"), "launch.shared", "must be >= 0"),
    (("  num_warps: 4", "  num_warps: 4\n  pdl: yes please"), "launch.pdl", "true or false"),
    (("  num_warps: 4", "  num_warps: 4\n  warps: 4"), "launch.warps", "unknown key"),
    (("  num_warps: 4", "  num_ctas: 32"), "launch.num_ctas", "must be <= 16 (the largest cluster)"),
    (("  num_warps: 4", "  num_ctas: 2\n  cluster: [2]"), "launch.cluster", "either num_ctas or cluster"),
    (("  num_warps: 4", "  global_scratch: {size: 64, align: 3}"), "launch.global_scratch.align",
     "power of two"),
    (("  num_warps: 4", "  scratch_params: 3"), "launch.scratch_params", "0, 1 or 2"),
    (("{expect: x + y, rtol: 1e-6}", "{expect: x + z}"), "check.out.expect", "unknown name 'z'"),
    (("{expect: x + y, rtol: 1e-6}", "{expect: x.sum()}"), "check.out.expect", "not allowed"),
    (("{expect: x + y, rtol: 1e-6}", "{rtol: 1e-6}"), "check.out", "exactly one of expect, file or reference"),
    (("{expect: x + y, rtol: 1e-6}", "{expect: x, exact: true, atol: 0}"), "check.out.exact",
     "no rtol/atol"),
    (("{expect: x + y, rtol: 1e-6}", "{expect: x, rtol: -1}"), "check.out.rtol", "non-negative"),
    (("  out: {expect", "  nope: {expect"), "check.nope", "not a buffer argument"),
    (("  bytes: 12 * N", "  l2: warm"), "bench.l2", "cold or hot"),
    (("  bytes: 12 * N", "  warmup: 0"), "bench.warmup", "positive"),
    (("vars:\n", "varz: {}\nvars:\n"), "varz", "unknown top-level key"),
])
def test_spec_errors(write_spec, edit, field, fragment):
    old, new = edit
    assert old in EXAMPLE
    err = spec_error(write_spec, EXAMPLE.replace(old, new, 1))
    assert err.field == field, str(err)
    assert fragment in err.message, str(err)
    assert err.line is not None, str(err)


def test_duplicate_keys_are_errors(write_spec):
    err = spec_error(write_spec, EXAMPLE.replace("  BLOCK: 1024\n", "  BLOCK: 1024\n  N: 4\n"))
    assert err.line == 12 and "duplicate key 'N' (first on line 10)" in str(err)


def test_invalid_yaml_gives_the_line(write_spec):
    err = spec_error(write_spec, EXAMPLE.replace("grid: [cdiv(N, BLOCK)]", "grid: [1, 2"))
    assert "invalid YAML" in str(err) and err.line is not None


def test_spec_must_be_a_mapping_and_file_must_exist(write_spec, tmp_path):
    assert "mapping" in str(spec_error(write_spec, "- 1\n- 2\n"))
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "absent.yaml")


def test_vars_may_name_vars_and_scalar_args_and_cycles_are_errors(write_spec):
    text = EXAMPLE.replace("  BLOCK: 1024\n", "  BLOCK: 1024\n  HALF: n // 2\n") \
                  .replace("bytes: 12 * N", "bytes: HALF")
    spec = load_spec(write_spec(text))
    assert spec.vars["HALF"] == 524288 and spec.bench.bytes == 524288
    err = spec_error(write_spec, EXAMPLE.replace("  N: 1048576", "  N: n + 1"))
    assert "circular definition" in str(err)


SHARED_NAME = EXAMPLE.replace("  N: 1048576\n", "  n: 4096\n").replace("[N]", "[n]") \
                   .replace("  n: N\n", "  n: n\n").replace("cdiv(N,", "cdiv(n,") \
                   .replace("12 * N", "12 * n")


def test_a_scalar_arg_named_like_a_var_takes_its_value_and_set_reaches_it(write_spec):
    spec = load_spec(write_spec(SHARED_NAME))
    assert spec.vars["n"] == 4096 and spec.scalars["n"] == 4096
    assert [a.value for a in spec.args if isinstance(a, ScalarArg)] == [4096]
    spec = load_spec(write_spec(SHARED_NAME), parse_overrides(["n=1000"]))
    assert spec.scalars["n"] == 1000 and spec.buffers["x"].shape == (1000,) and spec.grid[0] == 1
    err = spec_error(write_spec, SHARED_NAME, parse_overrides(["n=2**40"]))
    assert err.field == "--set n" and "i32" in str(err)


def test_a_scalar_arg_named_like_a_var_must_not_give_another_value(write_spec):
    err = spec_error(write_spec, SHARED_NAME.replace("  n: n\n", "  n: 2 * n\n"))
    assert err.field == "args.n" and err.line == 16
    assert "takes the var's value: write `n: n`" in str(err)


def test_vars_fill_braces_in_the_kernel_path_and_options(write_spec, tmp_path):
    (tmp_path / "k_128.cubin").write_bytes((tmp_path / "k.cubin").read_bytes())
    text = EXAMPLE.replace("cubin: k.cubin", "cubin: k_{BLOCK}.cubin")
    spec = load_spec(write_spec(text), parse_overrides(["BLOCK=128"]))
    assert spec.kernel.path == tmp_path / "k_128.cubin"
    err = spec_error(write_spec, text)
    assert err.field == "kernel.cubin" and "k_1024.cubin" in str(err)
    source = (EXAMPLE.replace("cubin: k.cubin", "source: k.cu\n  options: ['-DBLOCK={BLOCK}', "
                                                 "'-DHALF={H}', '{x}']")
              .replace("  BLOCK: 1024\n", "  BLOCK: 1024\n  H: BLOCK / 4 + 0.5\n"))
    (tmp_path / "k.cu").write_text("")
    err = spec_error(write_spec, source)
    assert err.field == "kernel.options[2]" and "{x} names no var (vars: N, BLOCK, H)" in str(err)
    spec = load_spec(write_spec(source.replace(", '{x}'", "")), parse_overrides(["BLOCK=64"]))
    assert spec.kernel.options == ("-DBLOCK=64", "-DHALF=16.5")


def test_kernel_arch_is_a_target_for_compiled_kinds_only(write_spec, tmp_path):
    (tmp_path / "k.cu").write_text("")
    source = EXAMPLE.replace("cubin: k.cubin", "source: k.cu\n  arch: sm_90a")
    assert load_spec(write_spec(source)).kernel.arch == "sm_90a"
    err = spec_error(write_spec, source.replace("sm_90a", "hopper"))
    assert err.field == "kernel.arch" and "such as sm_90" in str(err)
    err = spec_error(write_spec, EXAMPLE.replace("  name: add_kernel", "  name: add_kernel\n"
                                                                       "  arch: sm_90"))
    assert err.field == "kernel.arch" and "only `source:` and `ptx:`" in str(err)


def test_the_spec_may_hold_a_sweep_for_the_runner(write_spec):
    spec = load_spec(write_spec(EXAMPLE + "sweep:\n  N: pow2(10, 12)\n"))
    assert spec.vars["N"] == 1048576          # the loader evaluates one point; runs/ expands


SCALARS_SPEC = """\
kernel: {cubin: k.cubin}
signature: {a: i8, b: u64, c: fp16, d: bf16, e: fp32, f: fp64, g: i1, h: u1}
args:
  a: -128
  b: 2**64 - 1
  c: {c}
  d: 3.0e38
  e: .inf
  f: -0.0
  g: true
  h: 0
grid: [1]
"""


def test_scalar_edge_values_are_kept_exactly(write_spec):
    spec = load_spec(write_spec(SCALARS_SPEC.replace("{c}", "65504")))
    assert spec.scalars["a"] == -128 and spec.scalars["b"] == 2**64 - 1
    assert spec.scalars["c"] == 65504.0 and spec.scalars["d"] == 3.0e38
    assert spec.scalars["e"] == math.inf and math.copysign(1, spec.scalars["f"]) == -1
    assert spec.scalars["g"] == 1 and spec.scalars["h"] == 0
    spec = load_spec(write_spec(SCALARS_SPEC.replace("{c}", ".nan")))
    assert math.isnan(spec.scalars["c"])


@pytest.mark.parametrize("edit, fragment", [
    (("{c}", "65520"), "out of range for fp16"),
    (("d: 3.0e38", "d: 3.4e38"), "out of range for bf16"),
    (("a: -128", "a: -129"), "out of range for i8"),
    (("b: 2**64 - 1", "b: -1"), "out of range for u64"),
    (("g: true", "g: 2"), "out of range for i1"),
    (("a: -128", "a: 1.5"), "i8 needs an integer"),
])
def test_scalar_range_errors(write_spec, edit, fragment):
    text = SCALARS_SPEC.replace(*edit).replace("{c}", "1.0")
    err = spec_error(write_spec, text)
    assert fragment in str(err)


DESC_SPEC = """\
kernel: {cubin: k.cubin}
signature:
  a: "*fp16"
  t: ["i32", constexpr, "*fp32"]
  d: "tensordesc<fp16[64, 32]>"
  m: nvTmaDesc
args:
  a: {shape: [128, 64], init: {random: uniform, low: -1, high: 1, seed: 3}}
  t: [5, 16, {shape: [8], init: {fill: 2.5}}]
  d: {buffer: a}
  m: {buffer: {shape: [256, 256], dtype: bf16, init: arange}, block: [64, 64], swizzle: 128}
grid: [1]
"""


def test_tuples_descriptors_and_inline_buffers(write_spec):
    spec = load_spec(write_spec(DESC_SPEC))
    a, t, d, m = spec.args
    assert isinstance(t, TupleArg)
    assert [type(i) for i in t.items] == [ScalarArg, ConstArg, BufferRef]
    assert t.items[1].value == 16 and spec.buffers["t[2]"].init.value == 2.5
    assert isinstance(d, DescArg) and d.kind == "tensordesc" and d.buffer == "a" and d.block == (64, 32)
    assert isinstance(m, DescArg) and m.kind == "nvTmaDesc" and m.swizzle == 128
    assert spec.buffers["m"].dtype.name == "bf16" and spec.buffers["m"].shape == (256, 256)
    assert spec.buffers["a"].init.low == -1.0 and spec.buffers["a"].init.seed == 3


@pytest.mark.parametrize("edit, field, fragment", [
    (("d: {buffer: a}", "d: {buffer: q}"), "args.d.buffer", "'q' is not a buffer argument"),
    (("block: [64, 64], swizzle", "swizzle"), "args.m.block", "needs block"),
    (("swizzle: 128", "swizzle: 100"), "args.m.swizzle", "none, 32, 64, 128"),
    (("d: {buffer: a}", "d: {buffer: a, block: [64]}"), "args.d.block", "1 block dims for a 2-D"),
    (("t: [5, 16, {", "t: [5, {"), "args.t", "a tuple of 3 needs a list of 3 entries, got 2"),
    (("low: -1, high: 1", "low: 1, high: -1"), "args.a.init.high", "must be below high"),
    (("low: -1, high: 1", "mean: 0"), "args.a.init.mean", "does not go with random: uniform"),
    (("{fill: 2.5}", "{fill: 2.5, seed: 1}"), "args.t[2].init.seed", "does not go with fill"),
    (("{fill: 2.5}", "{file: nope.npy}"), "args.t[2].init.file", "no such file"),
])
def test_descriptor_and_init_errors(write_spec, edit, field, fragment):
    err = spec_error(write_spec, DESC_SPEC.replace(*edit))
    assert err.field == field and fragment in err.message, str(err)


def test_init_from_npy_file(write_spec, tmp_path):
    np.save(tmp_path / "data.npy", np.arange(8, dtype=np.float32))
    spec = load_spec(write_spec(DESC_SPEC.replace("{fill: 2.5}", "{file: data.npy}")))
    assert spec.buffers["t[2]"].init.path == tmp_path / "data.npy"


def test_null_pointer_and_block_and_cluster(write_spec):
    text = """\
    kernel: {cubin: k.cubin, name: k}
    signature: {p: "*fp32", q: "*fp32"}
    args: {p: null, q: {shape: [4]}}
    grid: [4, 2]
    block: [32, 8]
    launch: {cluster: [2, 2], shared: 65536}
    """
    spec = load_spec(write_spec(text))
    assert spec.args[0] == BufferRef("p", None) and list(spec.buffers) == ["q"]
    assert spec.block == (32, 8, 1) and spec.grid == (4, 2, 1)
    assert spec.launch.cluster == (2, 2, 1) and spec.launch.shared == 65536
    err = spec_error(write_spec, text.replace("grid: [4, 2]", "grid: [3, 2]"))
    assert err.field == "grid[0]" and "not a multiple of the cluster size 2" in err.message
    err = spec_error(write_spec, text.replace("block: [32, 8]", "block: [64, 32]"))
    assert err.field == "block" and "2048 threads per block exceed 1024" in err.message


def test_block_must_agree_with_an_explicit_num_warps(write_spec):
    text = EXAMPLE.replace("grid: [", "block: [256]\ngrid: [")
    err = spec_error(write_spec, text)
    assert err.field == "block" and "num_warps = 4 means 128" in err.message


def test_num_ctas_multiplies_the_launched_grid(write_spec):
    spec = load_spec(write_spec(EXAMPLE.replace("  num_warps: 4", "  num_warps: 4\n  num_ctas: 2")))
    assert spec.grid == (1024, 1, 1) and spec.launched_grid == (2048, 1, 1)


def test_scratch_defaults(write_spec):
    spec = load_spec(write_spec(EXAMPLE))
    assert spec.launch.scratch_params == 0
    spec = load_spec(write_spec(EXAMPLE.replace(
        "  num_warps: 4", "  num_warps: 4\n  global_scratch: {size: 256, align: 128}")))
    assert spec.launch.scratch_params == 2 and spec.launch.global_scratch.size == 256


TRITON = REPO / "tests" / "fixtures" / "triton"


def test_triton_entry_brings_signature_and_launch_metadata(tmp_path):
    entry = TRITON / "3.6.0" / "add_kernel" / "add_kernel.json"
    path = tmp_path / "t.yaml"
    path.write_text(f"""\
kernel: {{triton: {entry}}}
vars: {{N: 4096}}
args:
  x_ptr: {{shape: [N], init: random}}
  y_ptr: {{shape: [N], init: random}}
  out_ptr: {{shape: [N]}}
  n: N
grid: [cdiv(N, 1024)]
""")
    spec = load_spec(path)
    assert spec.kernel.name == "add_kernel" and str(spec.signature) == "*fp32,*fp32,*fp32,i32"
    assert spec.launch.num_warps == 4 and spec.launch.scratch_params == 2
    assert [leaf.type for leaf in spec.leaves()] == ["*fp32", "*fp32", "*fp32", "i32"]
    contradicting = path.read_text().replace("grid:", "launch: {num_warps: 8}\ngrid:")
    path.write_text(contradicting)
    with pytest.raises(SpecError, match="contradicts the Triton entry") as err:
        load_spec(path)
    assert err.value.field == "launch.num_warps"


@pytest.mark.parametrize("version, leaves", [
    ("3.4.0", 9),    # base, 2 shapes, 2 strides, (no padding flag), 2 shapes, 2 strides
    ("3.5.1", 10),   # ... with the padding flag
    ("3.7.1", 11),   # ... and round_f32_to_tf32
    ("3.9.0", 11),
])
def test_decomposed_tensordesc_padding_flag_follows_the_triton_version(tmp_path, version, leaves):
    entry = TRITON / version / "add_kernel" / "add_kernel.json"
    path = tmp_path / "t.yaml"
    path.write_text(f"""\
kernel: {{triton: {entry}}}
signature: {{d: "tensordesc<fp32[16, 16]>"}}
args: {{d: {{buffer: {{shape: [64, 64]}}}}}}
grid: [1]
""")
    spec = load_spec(path)
    assert len(spec.leaves()) == leaves
    from cubinrun.plan.slots import bind_slots
    slots = bind_slots(spec)
    assert [s.value for s in slots if s.kind == "scalar"][-4:] == [64, 64, 64, 1]
