"""Bad input, each kind found by hand or by fuzzing: every case ends with the
exit code a user should get and one line naming the file, field and line,
never a traceback, a hang or a blow-up (issue 9)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.cli import error_line, run as cli
from support.platforms import skip_on_windows
from support.repo import REPO
from support.specs import BASE, CUBIN, spec  # noqa: F401  (a fixture)

TRITON_ADD = REPO / "kernels" / "triton" / "add_kernel"


def billion_laughs(levels: int = 9) -> str:
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, levels):
        ref = f"*a{i - 1}"
        text += f"a{i}: &a{i} [{', '.join([ref] * 9)}]\n"
    return text


# --- YAML -----------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    (billion_laughs() + f"signature: {{x: *a8}}\n", "more than 100000 values once its aliases"),
    (BASE.replace("kernel:", "x: &x [*x]\nkernel:", 1), "found undefined alias|refers to the node"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 64 levels deep"),
    ("a: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", "nested more than 64 levels deep"),
    (BASE.replace("N: 1024", "N: " + "9" * 5000), ":10: an integer of 5000 digits"),
    (BASE.replace("N: 1024", "N: 10\x0024"), ":10: invalid YAML: character #x0000"),
])
def test_hostile_yaml_is_one_line(capsys, spec, text, message):
    line = error_line(capsys, "launch", "--dry-run", spec(text))
    assert __import__("re").search(message, line) and len(line) < 300, line


def test_a_spec_that_is_not_utf8_names_the_line(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(BASE.encode().replace(b"N: 1024", b"N: 1024 # \xff"))
    assert "s.yaml:10: not UTF-8 text (byte 0xff)" in error_line(capsys, "launch", "--dry-run", path)


def test_error_quotes_only_an_excerpt_of_a_long_value(capsys, spec):
    line = error_line(capsys, "launch", "--dry-run",
                      spec(BASE.replace("name: add_kernel", "name: [" + "x, " * 20000 + "x]")))
    assert "kernel.name: must be a kernel name" in line and len(line) < 300


def test_calls_split_at_commas_in_flow_mappings_are_rejoined(capsys, spec):
    text = BASE.replace("grid: [4]", "grid: [4]\nlaunch: {shared: max(N, 1024)}") + \
        "check:\n  out: {expect: maximum(x, y), rtol: 1e-6}\n"
    code, out, err = cli(capsys, "launch", "--dry-run", "--json", spec(text))
    assert code == 0, err
    assert json.loads(out)["shared"] == 1024


# --- expressions, vars, signatures ----------------------------------------

@pytest.mark.parametrize("grid, message", [
    ("+".join(["1"] * 5000), "expression of 9999 characters (at most 2000)"),
    ("+".join(["1"] * 900), "nested more than 200 levels deep"),
    ("(" * 250 + "1" + ")" * 250, "invalid expression"),
    ("2**" + "9" * 90, "integer literal exceeds 256 bits"),
    ("2**300", "too large (integer results are limited to 256 bits)"),
    ("'" + "9" * 5000 + "'", "expression of 5000 characters"),
])
def test_expressions_are_bounded(capsys, spec, grid, message):
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace("grid: [4]", f"grid: [{grid}]")))
    assert ":16: grid[0]: " in line and message in line and len(line) < 300, line


def test_integer_literals_in_yaml_are_bounded(capsys, spec):
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace("grid: [4]", "grid: [" + "9" * 5000 + "]")))
    assert ":16: an integer of 5000 digits (at most 100)" in line


def test_long_chains_of_vars_resolve_without_recursion(capsys, spec):
    chain = "".join(f"  V{i}: V{i + 1} + 1\n" for i in range(1000)) + "  V1000: 1\n"
    text = BASE.replace("N: 1024\n", "N: 1024\n" + chain).replace("grid: [4]", "grid: [V0]")
    code, out, err = cli(capsys, "launch", "--dry-run", "--json", spec(text))
    assert code == 0, err
    assert json.loads(out)["grid"] == [1001, 1, 1]


def test_a_cycle_among_vars_is_named(capsys, spec):
    text = BASE.replace("N: 1024", "N: A\n  A: B + 1\n  B: N")
    assert "circular definition: N -> A -> B -> N" in error_line(capsys, "launch", "--dry-run", spec(text))


@pytest.mark.parametrize("signature, message", [
    ("(" * 3000 + "i32" + ")" * 3000, "nested more than 16 levels deep"),
    ("i32," * 20000, "characters (at most 65536)"),
    ("tensordesc<fp32[" + "9" * 5000 + "]>", "characters (at most 4000)"),
])
def test_signatures_are_bounded(capsys, signature, message):
    assert message in error_line(capsys, "gen", "--signature", signature)


# --- buffers, data and checks in a dry run --------------------------------

@pytest.mark.parametrize("edit, message", [
    (("init: random}\n  y", "init: {fill: 300}, dtype: i8}\n  y"),
     ":12: args.x.init.fill: 300 is out of range for i8"),
    (("init: random}\n  y", "init: {fill: .nan}, dtype: i32}\n  y"),
     ":12: args.x.init.fill: i32 needs an integer, got nan"),
    (("init: random}\n  y", "init: {random: uniform, low: 0, high: 1e6}, dtype: fp16}\n  y"),
     ":12: args.x.init: uniform [0, 1e+06) does not fit fp16"),
    (("grid: [4]", "grid: [4]\ncheck:\n  out: {expect: cdiv(x)}"),
     ":18: check.out.expect: cdiv() takes 2 arguments, got 1"),
    (("grid: [4]", "grid: [4]\ncheck:\n  out: {expect: 1/0}"),
     ":18: check.out.expect: division by zero"),
    (("grid: [4]", "grid: [4]\ncheck:\n  out: {expect: x + z}\nvars2: 1"), "unknown top-level key"),
    (("shape: [N]}\n  n", "shape: [10**12]}\n  n"),
     ":14: args.out.shape: shape [1000000000000] of fp32 is 4000000000000 bytes"),
    (("shape: [N]}\n  n", "shape: [2**62, 2**62]}\n  n"), "args.out.shape[0]: must be <="),
    (("shape: [N]}\n  n", "shape: [1, 1, 1, 1, 1, 1, 1, 1, 1]}\n  n"), "9 dimensions (at most 8)"),
    (("grid: [4]", "grid: [4]\nlaunch: {shared: 10**9}"),
     ":17: launch.shared: 1000000000 bytes of dynamic shared memory exceed what sm_90 allows"),
    (("grid: [4]", "grid: [4]\nlaunch:\n  num_warps: 64"),
     ":18: launch.num_warps: must be <= 32 (1024 threads per block), got 64"),
    (("grid: [4]", "grid: [4]\nlaunch: {global_scratch: {size: 2**40}}"), "scratch"),
])
def test_dry_run_refuses_what_the_launch_would(capsys, spec, edit, message):
    old, new = edit
    assert old in BASE
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace(old, new)))
    assert message in line, line


def test_npy_headers_are_checked_before_anything_is_loaded(capsys, spec, tmp_path):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (10000000000000,), }"
    header += " " * (118 - len(header)) + "\n"
    (tmp_path / "huge.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                                        + header.encode())
    np.save(tmp_path / "small.npy", np.zeros(10, np.float32))
    np.save(tmp_path / "text.npy", np.array(["a"] * 1024))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "small.npy").read_bytes()[:-8])
    for name, message in (("huge", "has shape [10000000000000], the buffer is [1024]"),
                          ("small", "has shape [10], the buffer is [1024]"),
                          ("text", "holds <U1, not numbers")):
        text = BASE.replace("init: random}\n  y", f"init: {{file: {name}.npy}}}}\n  y")
        line = error_line(capsys, "launch", "--dry-run", spec(text))
        assert f":12: args.x.init.file: {name}.npy {message}" in line, line
    text = BASE.replace("N: 1024", "N: 10").replace("init: random}\n  y", "init: {file: cut.npy}}\n  y")
    assert "cut.npy is truncated" in error_line(capsys, "launch", "--dry-run", spec(text))


# --- files ------------------------------------------------------------------

def test_dev_zero_is_not_read_without_limit(capsys, spec):
    skip_on_windows("/dev/zero")
    assert "larger than 256 MiB" in error_line(capsys, "inspect", "/dev/zero")
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace(str(CUBIN), "/dev/zero")))
    assert "kernel.cubin: /dev/zero: larger than 256 MiB" in line


def test_a_fifo_is_refused_without_blocking(capsys, tmp_path):
    skip_on_windows("FIFOs (os.mkfifo)")
    fifo = tmp_path / "k.cubin"
    os.mkfifo(fifo)
    assert "not a regular file" in error_line(capsys, "inspect", fifo)


def fatbin(header_size: int, body: bytes) -> bytes:
    return ((0xBA55ED50).to_bytes(4, "little") + (1).to_bytes(2, "little")
            + header_size.to_bytes(2, "little") + len(body).to_bytes(8, "little") + body)


@pytest.mark.parametrize("data, message", [
    (fatbin(0, b""), "header size 0"),
    (fatbin(16, b""), "holds no code"),
    (fatbin(16, b"\0" * 8), "truncated fatbin"),
])
def test_damaged_fatbins(capsys, tmp_path, data, message):
    path = tmp_path / "k.fatbin"
    path.write_bytes(data * 3)
    assert message in error_line(capsys, "inspect", path)


@pytest.mark.parametrize("at, message", [
    (0x28, "section headers lie past the end"),        # e_shoff
    (0x20, "program headers lie past the end"),        # e_phoff
])
def test_elf_offsets_near_two_to_the_64(capsys, tmp_path, at, message):
    data = bytearray(CUBIN.read_bytes())
    data[at:at + 8] = (2**64 - 64).to_bytes(8, "little")
    path = tmp_path / "k.cubin"
    path.write_bytes(bytes(data))
    assert message in error_line(capsys, "inspect", path)


def test_every_section_must_lie_inside_the_file(capsys, tmp_path):
    data = bytearray(CUBIN.read_bytes())
    shoff = int.from_bytes(data[0x28:0x30], "little")
    at = shoff + 64 + 0x18                              # section 1's sh_offset
    data[at:at + 8] = (2**63).to_bytes(8, "little")
    path = tmp_path / "k.cubin"
    path.write_bytes(bytes(data))
    assert "section 1 lies past the end of the file" in error_line(capsys, "inspect", path)


# --- Triton entries -------------------------------------------------------

@pytest.mark.parametrize("key, value, message", [
    ("num_ctas", 0, "`num_ctas` should be an integer in [1, 16], got 0"),
    ("shared", -1, "`shared` should be an integer in [0, 4294967295], got -1"),
    ("global_scratch_size", -1, "`global_scratch_size` should be an integer"),
    ("global_scratch_align", 0, "`global_scratch_align` should be an integer in [1, "),
    ("profile_scratch_align", 3, "`profile_scratch_align` should be a power of two"),
    ("launch_pdl", "false", "`launch_pdl` should be true or false, got 'false'"),
    ("launch_cooperative_grid", 1, "`launch_cooperative_grid` should be true or false"),
    ("triton_version", 3.6, "`triton_version` should be a string"),
    ("cluster_dims", 5, "`cluster_dims` should be three integers"),
    ("num_warps", 10**30, "`num_warps` should be an integer in [1, 32]"),
    ("tensordesc_meta", [{"elem_type": "x"}], "`tensordesc_meta[0]` should be null or"),
    ("target", {"backend": "cuda", "arch": 10**9}, "no integer `target.arch`"),
])
def test_triton_json_fields_are_checked(capsys, tmp_path, key, value, message):
    entry = tmp_path / "e"
    shutil.copytree(TRITON_ADD, entry)
    meta = json.loads((entry / "add_kernel.json").read_text())
    meta[key] = value
    (entry / "add_kernel.json").write_text(json.dumps(meta))
    text = (REPO / "configs" / "triton_add.yaml").read_text().replace(
        "../kernels/triton/add_kernel", str(entry))
    (tmp_path / "t.yaml").write_text(text)
    line = error_line(capsys, "launch", "--dry-run", tmp_path / "t.yaml")
    assert f"add_kernel.json: {message}" in line, line


@pytest.mark.parametrize("name, data, message", [
    ("add_kernel.json", b'{"name": "\xff"}', "add_kernel.json:1: cannot read the Triton metadata: not UTF-8"),
    ("add_kernel.json", b"[" * 100000, "not valid JSON"),
    ("add_kernel.json", b'{"num_warps": ' + b"9" * 5000 + b"}", "not valid JSON"),
    ("add_kernel.source", b"tt.func public @add_kernel(\xff", "not UTF-8"),
])
def test_triton_files_that_cannot_be_read(capsys, tmp_path, name, data, message):
    entry = tmp_path / "e"
    shutil.copytree(TRITON_ADD, entry)
    (entry / name).write_bytes(data)
    text = (REPO / "configs" / "triton_add.yaml").read_text().replace(
        "../kernels/triton/add_kernel", str(entry))
    (tmp_path / "t.yaml").write_text(text)
    assert message in error_line(capsys, "launch", "--dry-run", tmp_path / "t.yaml")


# --- caches -----------------------------------------------------------------

def test_damaged_cubin_facts_are_parsed_again(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    code, first, _ = cli(capsys, "launch", "--dry-run", "--json", REPO / "configs" / "vector_add.yaml")
    assert code == 0
    entries = list((tmp_path / "cache" / "cubins").glob("*.json"))
    assert len(entries) == 1
    good = json.loads(entries[0].read_text())
    for damaged in ({**good, "kernels": 5}, {**good, "sm": "90"}, [1, 2], {**good, "kernels": [{}]}):
        entries[0].write_text(json.dumps(damaged))
        code, again, err = cli(capsys, "launch", "--dry-run", "--json",
                               REPO / "configs" / "vector_add.yaml")
        assert code == 0 and json.loads(again)["binary"] == json.loads(first)["binary"], err
    entries[0].unlink()
    entries[0].mkdir()                                  # an entry that is a folder
    code, _, err = cli(capsys, "launch", "--dry-run", REPO / "configs" / "vector_add.yaml")
    assert code == 0, err


def test_damaged_nvrtc_entries_are_compiled_again(tmp_path, monkeypatch):
    from cubinrun.binary import nvrtc
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    source = (REPO / "kernels" / "vector_add.cu").read_bytes()
    first = nvrtc.cached_compile(source, name="v.cu", arch="sm_90")
    cubin = first.path.read_bytes()
    first.path.write_bytes(cubin[:100])                 # cut short: the digest no longer matches
    again = nvrtc.cached_compile(source, name="v.cu", arch="sm_90")
    assert not again.hit and again.compiled.cubin == cubin
    meta = first.path.with_suffix(".json")
    meta.write_text(json.dumps({"log": 5, "lowered_names": {}, "arch": "sm_90"}))
    assert not nvrtc.cached_compile(source, name="v.cu", arch="sm_90").hit


def test_an_unwritable_nvrtc_cache_still_compiles(tmp_path, monkeypatch, capsys):
    from cubinrun.binary import nvrtc
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "file"))
    result = nvrtc.cached_compile((REPO / "kernels" / "vector_add.cu").read_bytes(),
                                  name="v.cu", arch="sm_90")
    assert result.compiled.cubin[:4] == b"\x7fELF"
    assert result.path is None or tmp_path / "file" not in result.path.parents
    [line] = capsys.readouterr().err.splitlines()          # one line, then a private folder
    assert "is not a folder" in line


# --- the command line ---------------------------------------------------------

def test_non_utf8_bytes_in_a_cu_compile(capsys, tmp_path):
    source = tmp_path / "k.cu"
    source.write_bytes(b"// caf\xe9 (Latin-1)\n__global__ void k(int *p) { *p = 1; }\n")
    code, _, err = cli(capsys, "compile", source, "--arch", "sm_90", "-o", tmp_path / "k.cubin")
    assert code == 0 and (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF", err


def test_compile_into_a_missing_folder(capsys, tmp_path):
    line = error_line(capsys, "compile", REPO / "kernels" / "vector_add.cu", "--arch", "sm_90",
                      "-o", tmp_path / "no" / "k.cubin")
    assert "no folder" in line


def test_gen_into_a_missing_folder(capsys, tmp_path):
    line = error_line(capsys, "gen", "--signature", "*fp32", "-o", tmp_path / "no" / "l.c")
    assert "no folder" in line


def test_arch_is_checked_in_a_dry_run(capsys):
    line = error_line(capsys, "launch", "--dry-run", "--arch", "banana",
                      REPO / "configs" / "vector_add.yaml")
    assert "invalid arch 'banana'" in line
    line = error_line(capsys, "launch", "--dry-run", "--arch", "sm_80",
                      REPO / "configs" / "vector_add.yaml")
    assert "kernel.cubin: the cubin is for sm_90, which cannot run on the target sm_80" in line


def test_debug_shows_the_traceback_and_keeps_the_exit_code(capsys, spec):
    code, _, err = cli(capsys, "--debug", "launch", "--dry-run",
                       spec(BASE.replace("grid: [4]", "grid: [foo]")))
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" in err and "grid[0]: unknown name 'foo' (known: N," in last


def test_control_characters_do_not_break_the_line(capsys, spec):
    line = error_line(capsys, "launch", "--dry-run", spec('kernel: {"\\u001e\\u2028": 1}\n'))
    assert "kernel.\\x1e\\u2028: unknown key" in line


def run_cubinrun(*args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cubinrun", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def test_stdout_closed_early_is_quiet():
    skip_on_windows("a shell pipeline into head closing stdout early")
    for args in (["inspect", str(CUBIN)], ["launch", "--dry-run", str(REPO / "configs" / "vector_add.yaml")],
                 ["gen", "--signature", "*fp32," * 50 + "i32"]):
        shell = subprocess.run(
            f"{sys.executable} -m cubinrun {' '.join(args)} | head -c 1 > /dev/null; "
            "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True,
            text=True, timeout=120)
        assert shell.stdout.strip() == "0" and shell.stderr == "", (args, shell)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_stdout_that_is_full_is_one_line():
    with open("/dev/full", "w") as full:
        done = run_cubinrun("inspect", "--json", str(CUBIN), stdout=full)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: cannot write to stdout: No space left on device; the output is lost"]


@pytest.mark.parametrize("bench, message", [
    ("warmup: 1e308 * 10", "bench.warmup: must be a positive number of ms up to 3600000, got inf"),
    ("rep: 1e308 * 10 - 1e308 * 10", "bench.rep: must be a positive number of ms"),
    ("bytes: 1e308 * 10 - 1e308 * 10", "bench.bytes: must be a finite number >= 0, got nan"),
])
def test_bench_numbers_are_finite(capsys, spec, bench, message):
    assert message in error_line(capsys, "launch", "--dry-run", spec(BASE + f"bench: {{{bench}}}\n"))


def test_a_nan_tolerance_is_refused(capsys, spec):
    text = BASE + "check:\n  out: {expect: x + y, rtol: 1e308 * 10 - 1e308 * 10}\n"
    assert "check.out.rtol: must be a non-negative number, got nan" in error_line(
        capsys, "launch", "--dry-run", spec(text))


def test_timing_budgets_on_the_command_line_are_finite(capsys):
    line = error_line(capsys, "launch", "--warmup", "inf", REPO / "configs" / "vector_add.yaml")
    assert "--warmup must be a positive number of ms" in line


def test_paths_with_nul_are_refused_when_the_spec_is_read(capsys, spec):
    text = BASE.replace("shape: [N]}\n  n", 'shape: [N], save: "o\\0ut.npy"}\n  n')
    assert ":14: args.out.save: a path cannot hold a NUL character" in error_line(
        capsys, "launch", "--dry-run", spec(text))


def test_device_ordinals_are_bounded(capsys):
    code, _, err = cli(capsys, "props", "--device", "99999999999999999999")
    assert code == 2 and "Traceback" not in err and "not in the range" in err


@pytest.mark.parametrize("data, message", [
    (b"[" * 100000, "nested too deeply"),
    (b'{"kernel": "k", "spec": 5}', "r.json:1: `spec` should be a string"),
    (b'{"kernel": "k", "timing": {"median_us": NaN}}', "NaN is not a number JSON allows"),
    (b'{"kernel": "k", "timing": {"median_us": "1"}}', "`timing.median_us` should be a number"),
    (b"\xff\xfe", ":1: not UTF-8 text"),
])
def test_result_files_are_input_too(capsys, tmp_path, data, message):
    path = tmp_path / "r.json"
    path.write_bytes(data)
    assert message in error_line(capsys, "compare", path, path)


def test_results_from_dev_zero_are_bounded(capsys):
    # the path as the platform spells it (\\dev\\zero under Wine)
    assert f"{Path('/dev/zero')}:1: a line longer than 64 MiB, the most read whole" in error_line(
        capsys, "compare", "/dev/zero", "/dev/zero")


def test_cc_with_an_unbalanced_quote_is_exit_3_and_one_line(tmp_path):
    """A regression of this issue's fixes (issue 24): it was a traceback, exit 1."""
    env = {**os.environ, "CC": "gcc '", "CUBINRUN_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "cubinrun", "launch",
                           str(REPO / "configs" / "vector_add.yaml"), "--dry-run"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    [line] = done.stderr.strip().splitlines()
    assert done.returncode == 3 and "$CC" in line and "balance its quotes" in line, done.stderr
