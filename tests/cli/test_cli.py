"""The command line without a GPU: gen, launch --dry-run, inspect, compile and
the errors a user can cause, each one line on stderr with SPEC's exit code."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cubinrun.launcher.build import find_cuda_include
from support.cli import one_error_line, run
from support.repo import CONFIGS, CUBINS, REPO


def test_help_lists_the_commands(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("launch", "gen", "props", "compile", "inspect"):
        assert command in out


def test_gen_prints_c_that_compiles_against_cuda_h_alone(capsys, tmp_path):
    code, out, _ = run(capsys, "gen", CONFIGS / "vector_add.yaml")
    assert code == 0 and "cuLaunchKernelEx" in out and "CONVERT(3, to_i32, p3);" in out
    source = tmp_path / "launcher.c"
    source.write_text(out)
    from cubinrun.launcher.compilers import find_compiler
    subprocess.run([*find_compiler().command, "-fsyntax-only", f"-I{find_cuda_include()}",
                    str(source)], check=True)


def test_gen_from_a_compact_signature_and_to_a_file(capsys, tmp_path):
    target = tmp_path / "l.c"
    code, out, _ = run(capsys, "gen", "--signature", "*fp32,(i32,fp16),nvTmaDesc",
                       "--scratch", "2", "-o", target)
    assert code == 0 and out == ""
    text = target.read_text()
    assert "#define NUM_PARAMS 4" in text and "#define NUM_SCRATCH 2" in text


def test_gen_usage_errors(capsys):
    code, _, err = run(capsys, "gen")
    assert code == 2 and "give a SPEC or --signature" in err
    code, _, err = run(capsys, "gen", "--signature", "*fp32,f32")
    assert code == 2 and one_error_line(err) == (
        "error: signature[1]: unknown type 'f32' (did you mean \"fp32\"?); expected one of "
        "i1, i8, i16, i32, i64, u1, u8, u16, u32, u64, fp16, bf16, fp32, fp64, *T, *kT, "
        "constexpr, nvTmaDesc, "
        "tensordesc<T[dims]>, struct[T, ...], T[n], TxN or a list")


def test_the_plan_shows_the_shared_memory_and_warps_the_launch_uses(capsys):
    code, out, _ = run(capsys, "launch", "--dry-run", CONFIGS / "block3d.yaml")
    assert code == 0 and "block 32 x 8 x 2  shared 16896 B (0 dynamic + 16896 static)" in out
    code, out, _ = run(capsys, "launch", "--dry-run", "--json", CONFIGS / "block3d.yaml")
    plan = json.loads(out)
    assert (plan["num_warps"], plan["shared"], plan["binary"]["shared_static"]) == (16, 0, 16896)


def test_dry_run_plan_as_json(capsys):
    code, out, err = run(capsys, "launch", "--dry-run", "--json", CONFIGS / "scratch.yaml")
    plan = json.loads(out)
    assert code == 0 and err == ""
    assert plan["kernel"] == "scratch_kernel" and plan["block"] == [256, 1, 1]
    assert [p["type"] for p in plan["params"]] == ["*kfp32", "*fp32", "i32"]
    assert plan["scratch"]["params"] == 2
    ctas = plan["launched_grid"][0]
    assert plan["scratch"]["global"] == {"size": 1024, "align": 128, "nbytes": 1024 * ctas}
    assert plan["binary"]["arch"] == "sm_90" and plan["launcher"].endswith((".so", ".pyd"))


def test_dry_run_table(capsys):
    code, out, _ = run(capsys, "launch", "--dry-run", CONFIGS / "triton_tma_copy.yaml")
    assert code == 0
    assert "in_desc.tma" in out and "nvTmaDesc" in out and "profile_scratch" in out


@pytest.mark.parametrize("config", sorted(p.name for p in CONFIGS.glob("*.yaml")
                                          if p.name != "vector_add_source.yaml"))
def test_every_sample_spec_passes_the_dry_run(capsys, config):
    # --arch: the persistent softmax's grid names the device's SM count
    code, out, err = run(capsys, "launch", "--dry-run", "--json", CONFIGS / config,
                         "--arch", "sm_90")
    assert code == 0, err
    assert "params" in json.loads(out)           # empty for a kernel without parameters


def test_source_spec_compiles_for_the_arch_given(capsys):
    code, _, err = run(capsys, "launch", "--dry-run", CONFIGS / "vector_add_source.yaml")
    assert code == 2 and "pass --arch" in one_error_line(err)
    code, out, _ = run(capsys, "launch", "--dry-run", "--json", "--arch", "sm_90",
                       CONFIGS / "vector_add_source.yaml")
    assert code == 0 and json.loads(out)["kernel"] == "add_kernel"


def test_source_spec_may_name_its_arch(capsys, tmp_path):
    text = (CONFIGS / "vector_add_source.yaml").read_text().replace("../kernels",
                                                                    str(REPO / "kernels"))
    spec = tmp_path / "src.yaml"
    spec.write_text(text.replace("  name: add_kernel", "  name: add_kernel\n  arch: sm_90"))
    code, out, err = run(capsys, "launch", "--dry-run", "--json", spec)
    assert code == 0, err
    assert json.loads(out)["binary"]["arch"] == "sm_90"
    code, _, err = run(capsys, "launch", "--dry-run", CONFIGS / "vector_add_source.yaml")
    assert "set kernel.arch in the spec" in one_error_line(err)


def spec_text(**edits) -> str:
    text = (CONFIGS / "vector_add.yaml").read_text().replace("../kernels", str(REPO / "kernels"))
    for old, new in edits.values():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("edit, message", [
    (("n: i32", "n: i64"), "signature.n: i64 is 8 bytes but parameter 3 of add_kernel is 4 bytes"),
    (('  n: i32\n', '  n: i32\n  m: i32\n'), "signature: the signature expands to 5 parameters"),
    (("name: add_kernel", "name: add"), "kernel.name: "),
    (("num_warps: 4", "num_warps: 4\n  num_ctas: 2"), None),
])
def test_specs_that_disagree_with_the_cubin_are_refused(capsys, tmp_path, edit, message):
    path = tmp_path / "bad.yaml"
    text = spec_text(e=edit)
    if "m: i32" in text:
        text = text.replace("  n: N\n", "  n: N\n  m: 1\n")
    path.write_text(text)
    code, out, err = run(capsys, "launch", "--dry-run", path)
    if message is None:                 # num_ctas: a spec the cubin cannot refute
        assert code == 0
        return
    line = one_error_line(err)
    assert code == 2 and message in line and line.startswith(f"error: {path}")


def test_kernel_name_error_lists_the_kernels(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(spec_text(e=("name: add_kernel", "name: add")))
    _, _, err = run(capsys, "launch", "--dry-run", path)
    assert "has no kernel 'add'; it has add_kernel" in err


def test_block_over_launch_bounds_is_refused(capsys, tmp_path):
    src = REPO / "tests" / "fixtures" / "cubins"
    bounded = next(p for p in sorted(src.glob("*.cubin")) if "resources" in p.name
                   and "sm_90" in p.name)
    code, out, _ = run(capsys, "inspect", "--json", bounded)
    kernels = json.loads(out)["kernels"]
    bounded_kernel = next(k for k in kernels if k["max_threads"])
    limit = bounded_kernel["max_threads"][0]
    pointer = '"*u8"'
    params = "\n".join(f"  p{p['ordinal']}: {pointer if p['size'] == 8 else 'i32'}"
                       for p in bounded_kernel["params"])
    args = "\n".join(f"  p{p['ordinal']}: {'{shape: [1]}' if p['size'] == 8 else 0}"
                     for p in bounded_kernel["params"])
    path = tmp_path / "b.yaml"
    path.write_text(f"kernel: {{cubin: {bounded}, name: {bounded_kernel['name']}}}\n"
                    f"signature:\n{params}\nargs:\n{args}\ngrid: [1]\nblock: [{2 * limit}]\n")
    code, _, err = run(capsys, "launch", "--dry-run", path)
    assert code == 2 and f"__launch_bounds__ of {limit}" in one_error_line(err)


@pytest.mark.parametrize("args, code, fragment", [
    (["launch", "missing.yaml"], 2, "missing.yaml: no such file"),
    (["launch", CONFIGS / "vector_add.yaml", "--set", "N"], 2, "--set expects NAME=VALUE"),
    (["launch", CONFIGS / "vector_add.yaml", "--set", "Q=1"], 2, "--set Q: no such var"),
    (["inspect", "nowhere.cubin"], 2, "nowhere.cubin: no such file"),
    (["inspect", CONFIGS / "vector_add.yaml"], 2, "not an ELF file"),
    (["compile", "nowhere.cu", "--arch", "sm_90"], 2, "nowhere.cu: no such file"),
])
def test_user_errors_are_one_line_with_the_spec_exit_code(capsys, args, code, fragment):
    got, out, err = run(capsys, *args)
    assert got == code and out == ""
    assert fragment in one_error_line(err)


def test_inspect_table_and_json(capsys):
    code, out, _ = run(capsys, "inspect", CUBINS / "vector_add.sm_90.cubin")
    assert code == 0 and "add_kernel" in out and "sm_90" in out
    code, out, _ = run(capsys, "inspect", "--json", CUBINS / "vector_add.sm_90.cubin")
    info = json.loads(out)
    assert info["arch"] == "sm_90"
    (kernel,) = info["kernels"]
    assert [p["size"] for p in kernel["params"]] == [8, 8, 8, 4] and kernel["param_bytes"] == 28
    assert set(kernel) >= {"name", "params", "param_bytes", "registers", "shared_static",
                           "local", "max_threads", "cluster"}


def test_compile_writes_a_cubin_and_a_syntax_error_exits_3(capsys, tmp_path):
    out_path = tmp_path / "va.cubin"
    code, _, err = run(capsys, "compile", REPO / "kernels" / "vector_add.cu", "--arch", "sm_90",
                       "-o", out_path)
    assert code == 0 and out_path.read_bytes()[:4] == b"\x7fELF" and "wrote" in err
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void k(int *p) { p[0] = ; }\n')
    code, _, err = run(capsys, "compile", bad, "--arch", "sm_90")
    assert code == 3
    assert "error" in err.splitlines()[0]                    # NVRTC's own log first
    assert err.strip().splitlines()[-1].startswith("error: NVRTC failed to compile")


def test_python_dash_m_and_debug_traceback():
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "nope.yaml"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and proc.stderr == "error: nope.yaml: no such file\n"
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "--debug", "launch", "nope.yaml"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode != 0 and "Traceback" in proc.stderr
