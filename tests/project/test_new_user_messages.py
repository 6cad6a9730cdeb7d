"""What a new user meets first (issue 24): each mistake is one line that says
the fix."""
from __future__ import annotations

import pytest

from cubinrun.errors import CudaError
from cubinrun.runs.outcome import NO_GPU_HINT, RunRecord, no_gpu
from cubinrun.signature.parse import suggestion

from support.cli import error_line, run as cli
from support.repo import REPO
from support.specs import BASE, CUBIN, spec  # noqa: F401  (fixtures)

SOURCE = REPO / "kernels" / "vector_add.cu"


def test_an_unquoted_pointer_type_says_to_quote_it(capsys, spec):
    path = spec(BASE.replace('x: "*fp32"', "x: *kfp32"))
    assert error_line(capsys, "launch", "--dry-run", path).endswith(
        's.yaml:5: invalid YAML: *kfp32 reads as a YAML alias; a pointer type must be quoted: '
        '"*kfp32"')


def test_a_pointer_given_a_number_says_what_it_needs(capsys, spec):
    path = spec(BASE.replace("x: {shape: [N], init: random}", "x: 5"))
    assert error_line(capsys, "launch", "--dry-run", path).endswith(
        "s.yaml:12: args.x: a pointer argument needs a buffer, got 5: write "
        "{shape: [N], init: zeros} (or null for a null pointer)")


@pytest.mark.parametrize("written, meant", [
    ("float", '"fp32"'), ("float*", '"*fp32"'), ("const float*", '"*kfp32"'),
    ("*float", '"*fp32"'), ("*kfloat", '"*kfp32"'), ("double *", '"*fp64"'),
    ("int", '"i32"'), ("uint8_t", '"u8"'), ("fp23", '"fp32"'), ("bf61", '"bf16"'),
    ("xyz", None),
])
def test_unknown_types_suggest_the_known_one(written, meant):
    assert suggestion(written) == meant


def test_did_you_mean_in_the_message(capsys, spec):
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace("n: i32", "n: float")))
    assert "signature.n: unknown type 'float' (did you mean \"fp32\"?); expected one of" in line
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace("[4]", "[cdvi(N, 4)]")))
    assert "call to 'cdvi' is not allowed in 'cdvi(N, 4)'; did you mean cdiv? allowed:" in line


@pytest.mark.parametrize("old, new, where", [
    ("  N: 1024\n", "  N: 1024\n  M 4\n  K: 8\n",
     "s.yaml:11: invalid YAML: no ':' after 'M' (write `M: ...`)"),
    ("  name: add_kernel\n", "  name add_kernel\n",
     "s.yaml:3: invalid YAML: no ':' after 'name' (write `name: ...`)"),
])
def test_a_missing_colon_is_named_on_its_own_line(capsys, spec, old, new, where):
    assert error_line(capsys, "launch", "--dry-run", spec(BASE.replace(old, new))).endswith(where)


def test_a_huge_key_without_its_colon_is_quoted_short(capsys, spec):
    """Found by the fuzzer: the key was cut where quoted, but not in the fix."""
    line = error_line(capsys, "launch", "--dry-run",
                      spec(BASE.replace("  N: 1024\n", "  N: 1024\n  " + "(" * 3000 + "\n")))
    assert "invalid YAML: no ':' after '(((" in line and len(line) < 300


def test_a_section_holding_a_key_without_colon_says_so(capsys, spec):
    line = error_line(capsys, "launch", "--dry-run", spec(BASE + "launch:\n  num_warps 4\n"))
    assert line.endswith("launch: must be a mapping, got a string ('num_warps' without its ':'?)")
    line = error_line(capsys, "launch", "--dry-run", spec(BASE.replace("N: 1024", "N 1024")))
    assert line.endswith("s.yaml:9: vars: must be a mapping of name to number or expression "
                         "('N' without its ':'?)")


def test_a_broadcast_error_names_the_shapes(capsys, spec):
    text = BASE.replace("y: {shape: [N], init: random}", "y: {shape: [N, 2], init: random}")
    text += "check:\n  out: {expect: x + y}\n"
    line = error_line(capsys, "launch", "--dry-run", spec(text))
    assert line.endswith("check.out.expect: in 'x + y', 'x' has shape [1024] and 'y' has shape "
                         "[1024, 2], which do not broadcast")


def test_a_swept_value_is_not_called_set(capsys, spec):
    code, _, err = cli(capsys, "launch", "--dry-run", spec(BASE), "--axis", "N=[1.5,2]")
    assert code == 2 and "the swept N: '1.5' is 1.5, a float" in err and "--set" not in err
    line = error_line(capsys, "launch", "--dry-run", spec(BASE), "--set", "N=1.5")
    assert "--set N: '1.5' is 1.5, a float" in line


def test_one_run_commands_suggest_set_words_a_shell_takes(capsys, spec):
    line = error_line(capsys, "repro", spec(BASE + "sweep:\n  N: [1024, 2048]\n"), "-o", "r")
    assert line.endswith("its sweep has 2 points and this command runs one: pick it with --set "
                         "(e.g. --set N=1024)")


def test_repro_takes_kernel_arch_without_a_gpu(capsys, spec, tmp_path):
    text = BASE.replace(f"cubin: {CUBIN}", f"source: {SOURCE}\n  arch: sm_90")
    code, out, err = cli(capsys, "repro", spec(text), "-o", tmp_path / "repro")
    assert code == 0 and out == "" and "wrote" in err, err      # said on stderr, as -o does
    assert (tmp_path / "repro" / "kernel.cubin").read_bytes()[:4] == b"\x7fELF"


def test_init_on_cuda_source_without_a_gpu_asks_for_the_target(capsys):
    # init compiles a .cu with NVRTC (tests/binary/test_cxx_kernels.py); with no GPU it needs --arch
    line = error_line(capsys, "init", SOURCE)
    assert line.endswith("pass --arch, e.g. --arch sm_90")


NO_DRIVER = "no NVIDIA driver found: cuInit could not load libcuda.so.1 (not found)"


class NoGpuExecutor:
    """Stands in for the worker: every run fails for want of a driver."""

    def __init__(self, *args, **kwargs):
        pass

    def run(self, tasks, stop):
        for task in tasks:
            yield RunRecord.failed(task, CudaError(NO_DRIVER, call="cuInit"))

    def close(self):
        pass


def test_no_gpu_is_said_once_with_the_dry_run_hint(capsys, spec, monkeypatch):
    from cubinrun.cli import launch
    monkeypatch.setattr(launch, "_executor", lambda tasks, args, options: NoGpuExecutor())
    code, out, err = cli(capsys, "launch", spec(BASE), "--axis", "N=[1024,2048,4096]")
    assert code == 4 and "3 runs: 3 CUDA error; exit 4" in out
    assert err.splitlines() == [f"error: {NO_DRIVER} (the same for all 3 runs); {NO_GPU_HINT}"]
    code, _, err = cli(capsys, "launch", spec(BASE))            # one run: its own line
    assert code == 4 and err.splitlines() == [f"error: {NO_DRIVER}; {NO_GPU_HINT}"]


def test_which_errors_mean_no_gpu():
    assert no_gpu(CudaError(NO_DRIVER))
    assert no_gpu(CudaError("cuInit failed: ...", result_name="CUDA_ERROR_NO_DEVICE"))
    assert not no_gpu(CudaError("cuLaunchKernel failed", result_name="CUDA_ERROR_LAUNCH_FAILED"))
