"""Many runs in one command, on the fake driver: result files parsed with real
parsers, exit-code precedence, --fail-fast, the baseline gate, and fault
isolation in worker processes (a sticky CUDA error, a worker killed mid-run).

Most tests run the runs in this process (ProcessExecutor swapped for the
InlineExecutor, with the fake device patched in as in tests/pipeline/test_run_fake.py); the
worker tests spawn real worker processes that install the fake themselves
(tests/fakecuda/worker.py through runs.executor.WORKER_SETUP)."""
from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fakecuda.device import FakeDevice
from support.cli import run as run_cli

from cubinrun.errors import EXIT_BUILD, EXIT_CHECK_FAILED, EXIT_CUDA, EXIT_OK, \
    EXIT_REGRESSION, EXIT_USAGE
from cubinrun.pipeline.result import RunOptions
from cubinrun.runs import executor
from cubinrun.runs.expand import expand
from cubinrun.runs.outcome import most_severe
from support.platforms import needs_scipy, skip_on_windows
from support.fake_runs import FAST, in_process, workers  # noqa: F401  (fixtures)
from support.repo import CONFIGS, REPO
from support.specs import passing, spec_copy  # noqa: F401  (fixtures)


def test_exit_codes_take_the_most_severe_with_regression_below_a_failed_check():
    assert most_severe([]) == EXIT_OK
    assert most_severe([EXIT_OK, EXIT_REGRESSION]) == EXIT_REGRESSION
    assert most_severe([EXIT_REGRESSION, EXIT_CHECK_FAILED]) == EXIT_CHECK_FAILED
    assert most_severe([EXIT_CHECK_FAILED, EXIT_USAGE, EXIT_OK]) == EXIT_USAGE
    assert most_severe([EXIT_USAGE, EXIT_BUILD]) == EXIT_BUILD
    assert most_severe([EXIT_BUILD, EXIT_CUDA, EXIT_REGRESSION]) == EXIT_CUDA


def test_a_sweep_and_several_specs_write_every_format(device, in_process, passing, tmp_path,
                                                      capsys):
    files = {k: tmp_path / f"out.{k}" for k in ("jsonl", "csv", "md", "xml")}
    code, out, err = run_cli(capsys, "launch", "--json", passing, CONFIGS / "vector_add.yaml",
                             "--axis", "N[pow2]=[10:12]", *FAST, "--samples",
                             "--jsonl", files["jsonl"], "--csv", files["csv"],
                             "--markdown", files["md"], "--junit", files["xml"])
    assert code == EXIT_CHECK_FAILED                      # the real vector add fails on the fake
    document = json.loads(out)
    results = document["results"]
    assert [(Path(r["spec"]).name, r["point"]["N"]) for r in results] == [
        ("passing.yaml", 1024), ("passing.yaml", 2048), ("passing.yaml", 4096),
        ("vector_add.yaml", 1024), ("vector_add.yaml", 2048), ("vector_add.yaml", 4096)]
    assert [r["exit_code"] for r in results] == [0, 0, 0, 1, 1, 1]
    assert document["summary"]["statuses"] == {"ok": 3, "check failed": 3}
    assert document["summary"]["exit_code"] == 1 and document["summary"]["not_run"] == 0
    first = results[0]
    assert first["kernel"] == "add_kernel" and first["grid"] == [1, 1, 1]
    assert len(first["timing"]["samples_us"]) == first["timing"]["samples"]
    assert first["timing"]["median_us"] == pytest.approx(FakeDevice.KERNEL_US)
    assert first["pow2"] == ["N"] and first["status"] == "ok" and first["error"] is None
    assert "sm_clock_mhz" in first["timing"]                # None: the fake runs no spin

    lines = files["jsonl"].read_text().splitlines()
    assert [json.loads(line)["point"] for line in lines] == [r["point"] for r in results]

    rows = list(csv.DictReader(io.StringIO(files["csv"].read_text())))
    assert len(rows) == 6 and rows[0]["point.N"] == "1024" and rows[3]["check"] == "FAIL"
    assert float(rows[0]["median_us"]) == pytest.approx(FakeDevice.KERNEL_US)
    assert float(rows[0]["gbps"]) == pytest.approx(12 * 1024 / 3e-6 / 1e9)

    markdown = files["md"].read_text().splitlines()
    assert markdown[0].startswith("### cubinrun: 6 runs: 3 ok, 3 check failed; exit 1")
    table = [line for line in markdown if line.startswith("|")]
    assert len(table) == 2 + 6 and all(line.count("|") == 8 for line in table)

    suites = ET.fromstring(files["xml"].read_text())
    suite = suites.find("testsuite")
    assert suite.get("tests") == "6" and suite.get("failures") == "3" and suite.get("errors") == "0"
    cases = suite.findall("testcase")
    assert cases[0].get("name") == "add_kernel[N=1024]" and cases[0].find("failure") is None
    assert cases[3].find("failure").get("type") == "check"
    assert cases[0].get("classname").endswith("passing")


def test_errors_of_every_kind_are_rows_and_the_worst_exit_wins(device, fake_libcuda, in_process,
                                                               passing, tmp_path, capsys):
    bad_spec = spec_copy(tmp_path, "bad.yaml", {"num_warps: 4": "num_warps: 0"})
    fake_libcuda.fail_launch(719, after=0)        # the first launch (the second spec's) fails
    junit = tmp_path / "j.xml"
    code, out, err = run_cli(capsys, "launch", bad_spec, passing, CONFIGS / "vector_add.yaml",
                             *FAST, "--junit", junit)
    assert code == EXIT_CUDA
    assert err.splitlines()[0].startswith(f"error: {bad_spec}:") and "launch.num_warps" in err
    assert "CUDA_ERROR_LAUNCH_FAILED" in err.splitlines()[1]
    assert "spec error" in out and "CUDA error" in out and "check failed" in out
    assert out.strip().splitlines()[-1] == "3 runs: 1 spec error, 1 CUDA error, 1 check failed; exit 4"
    cases = ET.parse(junit).getroot().find("testsuite").findall("testcase")
    assert [c.find("error").get("type") if c.find("error") is not None else None
            for c in cases] == ["spec", "cuda", None]


def test_fail_fast_stops_at_the_first_failure(device, in_process, passing, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", "--fail-fast", passing,
                           CONFIGS / "vector_add.yaml", passing, *FAST)
    document = json.loads(out)
    assert code == EXIT_CHECK_FAILED and len(document["results"]) == 2
    assert document["summary"]["not_run"] == 1


def test_one_run_keeps_the_single_result_document(device, in_process, passing, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", passing, "--set", "N=256", *FAST)
    report = json.loads(out)
    assert code == 0 and "results" not in report and report["kernel"] == "add_kernel"
    assert report["spec"] == str(passing) and report["point"] == {} and report["exit_code"] == 0
    assert "samples_us" not in report["timing"]


@pytest.fixture
def long_kernel(monkeypatch):
    """The fake kernel at 100 us: long enough that one process a side can be SAME
    (a difference within what two processes differ by is never a verdict)."""
    monkeypatch.setattr(FakeDevice, "KERNEL_US", 60.0)


@needs_scipy
def test_baseline_same_then_slower_exits_5(device, in_process, passing, tmp_path, capsys):
    baseline = tmp_path / "base.json"
    code, out, _ = run_cli(capsys, "launch", "--json", "--samples", passing, "--axis",
                           "N=[256,512]", *FAST)
    baseline.write_text(out)
    code, out, _ = run_cli(capsys, "launch", "--json", passing, "--axis", "N=[256,512]",
                           *FAST, "--baseline", baseline)
    results = json.loads(out)["results"]
    # the fake's 3 us kernel, one process a side: within what processes differ by
    assert code == 0 and [r["compare"]["verdict"] for r in results] == ["AMBIGUOUS"] * 2
    assert results[0]["compare"]["method"] == "mann-whitney"
    assert "--processes" in results[0]["compare"]["reason"]

    faster = json.loads(baseline.read_text())       # the baseline 40% faster at N=512
    timing = faster["results"][1]["timing"]
    timing["samples_us"] = [s * 0.6 for s in timing["samples_us"]]
    timing["median_us"] *= 0.6
    baseline.write_text(json.dumps(faster))
    junit = tmp_path / "j.xml"
    code, out, _ = run_cli(capsys, "launch", passing, "--axis", "N=[256,512]", *FAST,
                           "--baseline", baseline, "--junit", junit)
    assert code == EXIT_REGRESSION
    assert "SLOWER 1.667x" in out and "exit 5" in out
    failure = ET.parse(junit).getroot().find("testsuite").findall("testcase")[1].find("failure")
    assert failure.get("type") == "regression" and "SLOWER" in failure.get("message")


@needs_scipy
def test_baseline_from_another_gpu_model_is_refused(device, in_process, passing, tmp_path,
                                                    capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", passing, *FAST)
    other = json.loads(out)
    other["device"]["name"] = "Fake A100"
    (tmp_path / "b.json").write_text(json.dumps(other))
    code, _, err = run_cli(capsys, "launch", passing, *FAST, "--baseline", tmp_path / "b.json")
    assert code == EXIT_USAGE and "--ignore-device" in err
    code, out, _ = run_cli(capsys, "launch", passing, *FAST, "--baseline", tmp_path / "b.json",
                           "--ignore-device")
    assert code == 0 and "vs baseline: AMBIGUOUS" in out


def test_output_conflicts_are_usage_errors(capsys, passing):
    code, _, err = run_cli(capsys, "launch", passing, "--json", "--jsonl", "-")
    assert code == EXIT_USAGE and "both want stdout" in err
    code, _, err = run_cli(capsys, "launch", passing, "--plot", "p.pdf")
    assert code == EXIT_USAGE and ".png or .svg" in err


def test_inline_runs_recover_from_a_sticky_error(device, fake_libcuda, passing):
    fake_libcuda.set_param_sizes([])          # two signatures: record no parameter bytes
    device.sticky_kernels = {"fault_kernel"}
    tasks = expand([str(passing), str(CONFIGS / "fault.yaml"), str(passing)], {})
    run = executor.InlineExecutor(RunOptions(bench=False))
    try:
        records = list(run.run(tasks))
    finally:
        run.close()
    assert [r.exit_code for r in records] == [0, EXIT_CUDA, 0]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in records[1].error and records[1].broken
    assert "cuDevicePrimaryCtxReset" in device.calls


@pytest.mark.parametrize("fault, message", [
    ("FAKECUDA_STICKY", "CUDA_ERROR_ILLEGAL_ADDRESS"),
    ("FAKECUDA_CRASH", "the worker process running it was killed by SIGKILL"),
])
def test_a_fault_ends_only_its_own_run_in_worker_processes(workers, passing, fault, message,
                                                           capsys):
    if fault == "FAKECUDA_CRASH":
        skip_on_windows("the fake crash is a SIGKILL")
    workers.setenv(fault, "fault_kernel")
    code, out, err = run_cli(capsys, "launch", "--json", passing, CONFIGS / "fault.yaml",
                             passing, "--no-bench")
    results = json.loads(out)["results"]
    assert code == EXIT_CUDA
    assert [r["exit_code"] for r in results] == [0, EXIT_CUDA, 0]
    assert results[1]["error"]["type"] == "cuda" and message in results[1]["error"]["message"]
    assert results[2]["check"]["passed"] is True      # ran in a fresh worker after the fault
    assert message in err


def test_a_spec_without_the_set_var_fails_alone(workers, passing, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", passing, CONFIGS / "fault.yaml",
                           "--set", "N=256", "--no-bench")
    results = json.loads(out)["results"]
    assert code == EXIT_USAGE and [r["exit_code"] for r in results] == [0, EXIT_USAGE]
    assert "--set N: no such var" in results[1]["error"]["message"]


SLOW_WORKER = '''
import os, time
from fakecuda.worker import install

def setup():
    install()
    from cubinrun.runs import worker
    with open(os.environ["WORKER_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    real = worker.Runner.execute
    def slow(self, task):
        time.sleep(float(os.environ["WORKER_SLEEP_S"]))
        return real(self, task)
    worker.Runner.execute = slow
'''
LAUNCH_WITH_SLOW_WORKERS = '''
import sys
from cubinrun.runs import executor
executor.WORKER_SETUP = "slow_worker:setup"
from cubinrun.cli import main
main(sys.argv[1:])
'''


def start_with_slow_workers(tmp_path, passing, sleep_s: float):
    """`launch` of two points in a worker process that sleeps in each run; the
    worker's pid once it is there."""
    import os
    import subprocess
    import sys
    import time
    (tmp_path / "slow_worker.py").write_text(SLOW_WORKER)
    pids = tmp_path / "pids"
    env = {**os.environ, "WORKER_PIDS": str(pids), "WORKER_SLEEP_S": str(sleep_s),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "tests"),
                                          os.environ.get("PYTHONPATH", "")])}
    launch = subprocess.Popen([sys.executable, "-c", LAUNCH_WITH_SLOW_WORKERS, "launch",
                               str(passing), "--axis", "N=[256,512]", "--no-bench"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    for _ in range(600):
        if pids.exists() and pids.read_text().strip():
            break
        time.sleep(0.05)
    else:
        launch.kill()
        pytest.fail(f"no worker started: {launch.communicate()}")
    time.sleep(0.5)                                     # in its first run now
    return launch, int(pids.read_text().split()[0])


def gone(pid: int, within_s: float) -> bool:
    import os
    import time
    for _ in range(int(within_s / 0.05)):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            os.waitpid(pid, os.WNOHANG)                 # not our child: only for zombies
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_sigterm_to_the_launch_process_ends_its_workers_without_a_traceback(
        fake_libcuda, passing, tmp_path):
    """Issue 24: the workers ran on and printed a BrokenPipeError traceback."""
    skip_on_windows("SIGTERM to one process is POSIX")
    import signal
    launch, worker_pid = start_with_slow_workers(tmp_path, passing, sleep_s=30)
    launch.send_signal(signal.SIGTERM)
    out, err = launch.communicate(timeout=20)
    assert launch.returncode == -signal.SIGTERM          # as the signal ends it: 143 in a shell
    assert gone(worker_pid, within_s=10), "the worker outlived the launch process"
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_a_worker_whose_launch_process_was_killed_ends_quietly(fake_libcuda, passing, tmp_path):
    """SIGKILL cannot be forwarded: the worker finishes its run, finds no one
    to answer and exits, with no traceback."""
    skip_on_windows("SIGKILL to one process is POSIX")
    import signal
    launch, worker_pid = start_with_slow_workers(tmp_path, passing, sleep_s=2)
    launch.send_signal(signal.SIGKILL)
    out, err = launch.communicate(timeout=30)             # the worker holds stderr until it ends
    assert launch.returncode == -signal.SIGKILL
    assert gone(worker_pid, within_s=10)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_a_timing_only_task_is_timed_and_not_checked(device, fake_libcuda):
    """A tune's re-timing (tune/retime.py): the point was checked in the search, so
    its run neither makes the reference nor reads the outputs back."""
    from dataclasses import replace
    (task,) = expand([str(CONFIGS / "vector_add.yaml")], {"N": "4096"})
    run = executor.InlineExecutor(RunOptions(warmup_ms=1, rep_ms=1))
    try:
        checked, = run.run([task])
        device.calls.clear()
        timed, = run.run([replace(task, timing_only=True)])
    finally:
        run.close()
    assert checked.exit_code == EXIT_CHECK_FAILED           # the fake runs no kernel
    assert timed.exit_code == EXIT_OK and timed.result["check"]["passed"] is None
    assert timed.result["timing"]["samples"] >= 10
    assert "cuMemcpyDtoHAsync" not in device.calls
