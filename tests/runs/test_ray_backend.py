"""`--ray` on a local Ray cluster with two logical GPUs (`ray.init(num_cpus=2,
num_gpus=2)`: Ray gives each actor its CUDA_VISIBLE_DEVICES) and the fake
driver, which each actor installs (runs.executor.WORKER_SETUP) and which then
honours that variable ($FAKECUDA_DEVICES=2). Skipped when Ray is not
installed (it is in the `test` extra, so CI runs these).

One cluster serves the module: it inherits this process's environment when
it starts, so the fake's settings go in first. Ray's memory monitor is off
in it: on a loaded 2-core machine it can kill the tiny actors for the
memory other processes use."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from support.repo import CONFIGS, PACKAGE_PARENT, REPO
from support.cli import run as run_cli
from support.fake_runs import FAST, comparable, fake_uuid, workers  # noqa: F401  (fixtures)
from support.specs import passing, spec_copy  # noqa: F401  (fixtures)

from cubinrun.errors import EXIT_CHECK_FAILED, EXIT_CUDA, EXIT_OK, EXIT_USAGE

ray = pytest.importorskip("ray")

ENV = {"FAKECUDA_DEVICES": "2", "FAKECUDA_CRASH": "fault_kernel",
       "RAY_memory_monitor_refresh_ms": "0",           # where Ray lives (--target) stays too:
       "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(PACKAGE_PARENT),
                                      *filter(None, os.environ.get("PYTHONPATH", "")
                                              .split(os.pathsep))])}


@pytest.fixture(scope="module")
def cluster(fake_libcuda):
    import logging
    with pytest.MonkeyPatch.context() as patch:
        for name, value in ENV.items():
            patch.setenv(name, value)
        ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
        try:
            yield ray
        finally:
            ray.shutdown()


def test_an_error_raised_on_a_worker_is_its_one_line():
    """Ray wraps what a worker raised in a class that is also the cause's, whose
    text is the whole remote traceback; the record keeps the one line, even
    when the cause itself did not come back."""
    from ray.exceptions import RayTaskError

    from cubinrun.errors import UsageError
    from cubinrun.runs.expand import RunTask
    from cubinrun.runs.outcome import RunRecord
    from cubinrun.runs.ray_backend import remote_cause
    line = "/a/../b: not a plain absolute path"
    trace = f"Traceback (most recent call last):\n  File x\ncubinrun.errors.UsageError: {line}"
    wrapped = RayTaskError("RayWorker.run", trace, UsageError(line)).as_instanceof_cause()
    assert "Traceback" in str(wrapped) or "File x" in str(wrapped)
    for cause in (wrapped.cause, None):
        wrapped.cause = cause
        record = RunRecord.failed(RunTask(0, "s.yaml"), remote_cause(wrapped))
        assert (record.exit_code, record.error, record.status) == (EXIT_USAGE, line, "spec error")


def test_ray_gives_the_results_of_one_worker_in_order(cluster, workers, device, passing,
                                                      capsys):
    specs = (passing, CONFIGS / "vector_add.yaml", "--axis", "N=[256,512,1024,2048]", *FAST)
    code, out, _ = run_cli(capsys, "launch", "--json", *specs)
    plain = json.loads(out)["results"]
    code_ray, out, err = run_cli(capsys, "launch", "--json", *specs, "--ray")
    results = json.loads(out)["results"]
    assert code == code_ray == EXIT_CHECK_FAILED and err == ""
    assert [comparable(r) for r in results] == [comparable(r) for r in plain]
    assert [r["exit_code"] for r in results] == [0] * 4 + [1] * 4
    cards = {r["device"]["ordinal"]: r["device"]["uuid"] for r in results}
    assert cards == {0: fake_uuid(0), 1: fake_uuid(1)}        # one actor per logical GPU
    assert all(r["timing"]["median_us"] == pytest.approx(3.0) for r in results)


def test_a_killed_ray_worker_fails_only_its_run_and_is_replaced(cluster, workers, passing,
                                                                capsys):
    code, out, err = run_cli(capsys, "launch", "--json", passing, CONFIGS / "fault.yaml",
                             passing, passing, passing, "--no-bench", "--ray")
    results = json.loads(out)["results"]
    assert code == EXIT_CUDA and [r["exit_code"] for r in results] == [0, EXIT_CUDA, 0, 0, 0]
    message = results[1]["error"]["message"]
    assert message == "the Ray worker running it died (its worker process has died)"
    assert results[1]["device"]["uuid"] in (fake_uuid(0), fake_uuid(1))
    assert err.strip() == f"error: {CONFIGS / 'fault.yaml'}: {message}"


def test_workers_share_gpus_and_saved_files_come_back_in_order(cluster, workers, tmp_path,
                                                               monkeypatch, capsys):
    spec = spec_copy(tmp_path, "save.yaml", {
        "expect: x + y": "expect: 0 * x + N",
        "out: {shape: [N], init: zeros}": "out: {shape: [N], init: {fill: N}, save: out.npy}"})
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "launch", "--json", "save.yaml", "--axis",
                             "N=[8,16,32,64,128]", "--no-bench", "--ray",
                             "--workers-per-gpu", "2")
    results = json.loads(out)["results"]
    assert code == EXIT_OK and err == "", err
    assert all(r["device"]["shared_by"] == 2 for r in results)
    assert len({r["device"]["uuid"] for r in results}) == 2
    assert [r["saved"] for r in results] == [["out.npy"]] * 5
    saved = np.load(tmp_path / "out.npy")                   # the last point's, as locally
    assert saved.shape == (128,) and (saved == 128).all() and spec.exists()


def test_workers_that_cannot_start_end_the_command_with_the_reason(cluster, workers, passing,
                                                                  capsys):
    workers.setattr("cubinrun.runs.executor.WORKER_SETUP", "no_such_module:install")
    code, out, err = run_cli(capsys, "launch", passing, "--ray", "--axis", "N=[256,512]")
    assert code == EXIT_USAGE and not out
    assert err == ("error: --ray: no worker started (it failed to start: ModuleNotFoundError: "
                   "No module named 'no_such_module')\n")


def test_a_command_starts_its_own_local_cluster(tmp_path, passing):
    """`--ray` with no address, in a fresh process: a local cluster with the GPUs
    CUDA counts here (the fake's two), stopped afterwards; stdout stays JSON."""
    program = ("import sys; import fakecuda.worker as w; w.install(); "
               "import cubinrun.runs.executor as e; e.WORKER_SETUP = 'fakecuda.worker:install'; "
               "from cubinrun.cli import main; main(sys.argv[1:])")
    env = {**os.environ, **ENV, "CUBINRUN_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", program, "launch", "--json", str(passing),
                           str(CONFIGS / "fault.yaml"), str(passing), "--no-bench", "--ray"],
                          capture_output=True, text=True, env=env, timeout=300)
    results = json.loads(proc.stdout)["results"]
    assert proc.returncode == EXIT_CUDA, proc.stderr
    assert [r["exit_code"] for r in results] == [0, EXIT_CUDA, 0]
    assert "Traceback" not in proc.stderr
