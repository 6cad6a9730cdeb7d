"""`cubinrun init`: the starter spec of every sample kernel passes its own dry
run, its guesses are marked, and `-o` (of init and gen) never overwrites a
file without --force."""
from __future__ import annotations

import json
import shutil

import pytest

from cubinrun.signature.aggregates import size_align
from cubinrun.binary.cubin import ParamInfo, load_cubin
from cubinrun.signature import parse_type
from cubinrun.cli.starter import guess_type

from support.cli import one_error_line as one_line, run
from support.repo import REPO

CUBINS = REPO / "kernels" / "build"
TRITON = REPO / "kernels" / "triton"
SAMPLE_KERNELS = [(cubin, kernel.name)
                  for cubin in sorted(CUBINS.glob("*.cubin")) + sorted(TRITON.glob("*/*.cubin"))
                  for kernel in load_cubin(cubin).kernels]


@pytest.mark.parametrize("cubin, kernel", SAMPLE_KERNELS,
                         ids=[f"{c.stem}:{k}" for c, k in SAMPLE_KERNELS])
def test_every_sample_kernels_starter_spec_passes_its_dry_run(capsys, tmp_path, cubin, kernel):
    spec = tmp_path / "starter.yaml"
    code, _, err = run(capsys, "init", cubin, "--kernel", kernel, "-o", spec)
    assert code == 0 and err == f"wrote {spec}\n"
    code, out, err = run(capsys, "launch", "--dry-run", "--json", spec)
    assert code == 0, f"{spec.read_text()}\n{err}"
    assert json.loads(out)["kernel_mangled"] == kernel


def test_a_plain_cubins_types_are_each_marked_as_a_guess(capsys):
    code, text, _ = run(capsys, "init", CUBINS / "empty.sm_90.cubin", "--kernel", "empty16")
    signature = text.split("signature:\n")[1].split("vars:")[0].splitlines()
    assert code == 0 and len(signature) == 16
    assert all("# guess: " in line for line in signature)
    # the one-byte parameters get a value an i8 holds, not the problem size
    assert "  p6: 1\n" in text and "  p2: N\n" in text


def test_sizes_that_are_no_scalar_become_a_struct_that_fits(capsys):
    code, text, _ = run(capsys, "init", CUBINS / "structs.sm_90.cubin")
    assert code == 0
    assert "p0: struct[i32, i32, i32, i32, i32, i32]" in text and "p0: [N, N, N, N, N, N]" in text


@pytest.mark.parametrize("size, offset", [(8, 8), (4, 4), (2, 2), (24, 0), (3, 1), (12, 4),
                                          (6, 50), (16, 48), (128, 64), (128, 8), (200, 8),
                                          (1000, 1)])
def test_guessed_types_have_the_parameters_size_and_fit_its_offset(size, offset):
    spelled, why = guess_type(ParamInfo(0, offset, size))
    ty = parse_type(spelled.strip('"'), "signature.p0")
    if spelled == "nvTmaDesc":
        assert offset % 64 == 0 and size == 128
        return
    assert size_align(ty)[0] == size and offset % size_align(ty)[1] == 0
    assert f"{size} bytes at offset {offset}" in why


def test_a_compiled_cluster_gets_a_grid_that_is_a_multiple(capsys):
    code, text, _ = run(capsys, "init", CUBINS / "cluster.sm_90.cubin", "--kernel",
                        "cluster_swap_dims")
    assert code == 0 and "grid: [2, 1, 1]" in text and "TODO" in text


def test_a_kernel_without_parameters(capsys):
    code, text, _ = run(capsys, "init", CUBINS / "empty.sm_90.cubin", "--kernel", "empty0")
    assert code == 0 and "signature: {}" in text and "args" not in text


def test_several_kernels_need_the_kernel_flag(capsys):
    code, _, err = run(capsys, "init", CUBINS / "cluster.sm_90.cubin")
    line = one_line(err)
    assert code == 2 and "holds 2 kernels (cluster_swap_launch, cluster_swap_dims)" in line
    assert line.endswith("say which one with --kernel NAME")


def test_a_triton_cubin_uses_its_entry_instead_of_guessing(capsys, tmp_path):
    spec = tmp_path / "t.yaml"
    code, _, _ = run(capsys, "init", TRITON / "tma_copy_kernel" / "tma_copy_kernel.cubin",
                     "-o", spec)
    text = spec.read_text()
    assert code == 0 and "  triton: " in text and "signature:" not in text and "# guess" not in text
    assert "#   in_desc: tensordesc<fp16[64, 64]>" in text
    # the kernel has a parameter N, so the problem size is another var
    assert "  N: SIZE\n" in text and "  SIZE: 1024" in text


def test_a_cubin_beside_an_unreadable_triton_json_is_guessed_with_a_note(capsys, tmp_path):
    shutil.copy(TRITON / "add_kernel" / "add_kernel.cubin", tmp_path)
    (tmp_path / "add_kernel.json").write_text(json.dumps({"name": "add_kernel",
                                                          "num_warps": "four"}))
    spec = tmp_path / "s.yaml"
    code, _, _ = run(capsys, "init", tmp_path / "add_kernel.cubin", "-o", spec)
    text = spec.read_text()
    assert code == 0 and "add_kernel.json is beside it but does not read as a Triton" in text
    assert "use kernel: {triton: add_kernel.json} instead of guessed types" in text
    assert "# guess:" in text
    code, _, err = run(capsys, "launch", "--dry-run", spec)
    assert code == 0, err


@pytest.mark.parametrize("command", [
    ["init", CUBINS / "vector_add.sm_90.cubin"],
    ["gen", "--signature", "*fp32,i32"],
])
def test_dash_o_keeps_an_existing_file_unless_forced(capsys, tmp_path, command):
    target = tmp_path / "out.txt"
    target.write_text("mine")
    code, out, err = run(capsys, *command, "-o", target)
    assert code == 2 and out == "" and target.read_text() == "mine"
    assert one_line(err) == f"error: {target} exists; pass --force to overwrite it"
    code, _, _ = run(capsys, *command, "-o", target, "--force")
    assert code == 0 and target.read_text() != "mine"


def test_dash_o_into_a_missing_folder_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "gen", "--signature", "i32", "-o", tmp_path / "no" / "l.c")
    assert code == 2 and "cannot write" in one_line(err)


def test_a_spec_names_a_cubin_on_another_drive_by_its_absolute_path(tmp_path, monkeypatch):
    """On Windows relpath raises across drives (C: and D:): the path stays absolute."""
    from cubinrun.cli import starter

    def across_drives(path, start):
        raise ValueError(f"path is on mount 'D:', start on mount 'C:'")

    cubin = tmp_path / "k.cubin"
    assert starter.path_from(tmp_path / "specs" / "..", cubin) == "k.cubin"
    monkeypatch.setattr(starter.os.path, "relpath", across_drives)
    assert starter.path_from(tmp_path, cubin) == cubin.resolve().as_posix()


def test_a_starter_from_source_keeps_its_arch_and_the_sources_names(capsys, tmp_path):
    spec = tmp_path / "starter.yaml"
    code, _, err = run(capsys, "init", REPO / "kernels" / "vector_add.cu", "--arch", "sm_90",
                       "-o", spec)
    assert code == 0, err
    text = spec.read_text()
    assert "  arch: sm_90" in text                      # dry-runs without a GPU, as init did
    signature = text.split("signature:\n")[1].split("vars:")[0]
    assert [line.split(":")[0].strip() for line in signature.splitlines()] == [
        "x", "y", "out", "n"]
    code, out, err = run(capsys, "launch", "--dry-run", "--json", spec)
    assert code == 0 and json.loads(out)["status"] == "dry-run", err


def test_an_overloads_names_come_from_its_own_declaration(capsys):
    code, text, _ = run(capsys, "init", REPO / "kernels" / "cxx" / "axpy.cu", "--kernel",
                        "axpy(double, double const*, double*, int)", "--arch", "sm_90")
    assert code == 0 and "  a: fp64" in text and '  x: "*kfp64"' in text and "  n: N" in text
