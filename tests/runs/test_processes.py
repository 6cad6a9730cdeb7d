"""`launch --processes N` (runs/processes.py, runs/pooling.py): each run
timed in N fresh worker processes on the fake driver, pooled into one result
that keeps each process's median."""
from __future__ import annotations

import json
import statistics

import pytest
from support.cli import run as run_cli
from support.fake_runs import FAST, workers  # noqa: F401  (fixtures)
from support.specs import passing, spec_copy  # noqa: F401  (fixtures)

from cubinrun.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE
from cubinrun.runs.outcome import RunRecord
from cubinrun.runs.pooling import pooled, pooled_timing


def test_each_run_is_timed_in_every_process_and_pooled(workers, passing, tmp_path, capsys):
    results_file = tmp_path / "r.jsonl"
    code, out, _ = run_cli(capsys, "launch", "--json", passing, passing, "--processes", "3",
                           "--samples", "--jsonl", results_file, *FAST)
    assert code == EXIT_OK
    results = json.loads(out)["results"]
    assert len(results) == 2
    for result in results:
        timing = result["timing"]
        assert timing["processes"] == 3 and len(timing["process_medians_us"]) == 3
        assert timing["median_us"] == statistics.median(timing["process_medians_us"])
        assert len(timing["samples_us"]) == timing["samples"] == len(timing["sm_clocks_mhz"])
        assert len(timing["process_offsets_us"]) == 3
        assert result["check"]["passed"] is True      # the first process checked
    written = [json.loads(line) for line in results_file.read_text().splitlines()]
    assert [r["timing"]["process_medians_us"] for r in written] == \
        [r["timing"]["process_medians_us"] for r in results]


def test_without_samples_the_pooled_result_keeps_only_the_process_medians(workers, passing,
                                                                        capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", passing, "--processes", "2", *FAST)
    document = json.loads(out)
    timing = document.get("results", [document])[0]["timing"]
    assert code == EXIT_OK and timing["processes"] == 2
    assert "samples_us" not in timing and timing["samples"] >= 2 * 10


def test_a_failed_check_is_not_timed_in_the_other_processes(workers, tmp_path, capsys):
    failing = spec_copy(tmp_path, "failing.yaml", {"expect: x + y": "expect: x + 1",
                                                    "N: 1048576": "N: 4096"})
    code, out, _ = run_cli(capsys, "launch", "--json", failing, "--processes", "3", *FAST)
    document = json.loads(out)
    result = document.get("results", [document])[0]
    assert code == EXIT_CHECK_FAILED and result["check"]["passed"] is False
    assert "processes" not in (result["timing"] or {})


@pytest.mark.parametrize("flags, named", [(["--no-bench"], "--no-bench"),
                                          (["--devices", "0"], "--devices")])
def test_processes_refuse_what_does_not_time_on_one_gpu(passing, capsys, flags, named):
    code, _, err = run_cli(capsys, "launch", passing, "--processes", "2", *flags)
    assert code == EXIT_USAGE and named in err and "--processes 2" in err


def _record(median, samples, offset=2.0, exit_code=EXIT_OK):
    timing = {"median_us": median, "samples_us": samples, "sm_clocks_mhz": [1980.0] * len(samples),
              "event_offset_us": offset, "samples": len(samples), "elapsed_s": 0.1,
              "stopped": "budget", "dropped_samples": 1, "throttled_samples": 0}
    result = {"timing": timing, "throughput": {"gbps": 100.0, "tflops": None, "peak_gbps": 4800.0}}
    return RunRecord(task=None, exit_code=exit_code, result=result, wall_s=1.0)


def test_pooling_takes_the_median_of_the_process_medians_and_rescales_throughput():
    records = [_record(2.0, [2.0, 2.0, 2.1]), _record(2.2, [2.2, 2.2, 2.3], offset=2.1),
               _record(4.0, [4.0, 4.0, 4.0])]       # one process slow as a whole
    record = pooled(records, keep_samples=False)
    timing = record.result["timing"]
    assert timing["median_us"] == 2.2                 # not the pooled samples' median
    assert timing["process_medians_us"] == [2.0, 2.2, 4.0]
    assert timing["process_spread"] == pytest.approx((4.0 - 2.0) / 2.2)
    assert timing["dropped_samples"] == 3 and timing["samples"] == 9
    assert timing["event_offset_us"] == 2.0 and timing["elapsed_s"] == pytest.approx(0.3)
    assert "samples_us" not in timing and timing["sm_clock_mhz"] == 1980.0
    assert timing["too_noisy"] is True                # processes 91% apart: no 3% verdict
    assert record.result["throughput"]["gbps"] == pytest.approx(100.0 * 2.0 / 2.2)
    assert record.result["throughput"]["peak_gbps"] == 4800.0
    assert record.wall_s == 3.0


def test_a_process_that_failed_makes_the_pooled_record_its_failure():
    broken = RunRecord(task=None, exit_code=4, error="CUDA_ERROR_ILLEGAL_ADDRESS", wall_s=1.0)
    record = pooled([_record(2.0, [2.0]), broken], keep_samples=True)
    assert record is broken and record.error.startswith("in process 2 of 2: ")


def test_pooled_timing_keeps_samples_in_process_order():
    timing = pooled_timing([_record(1.0, [1.0, 1.1]).result["timing"],
                            _record(3.0, [3.0]).result["timing"]], keep_samples=True)
    assert timing["samples_us"] == [1.0, 1.1, 3.0] and timing["processes"] == 2


def test_a_run_got_ready_ahead_is_the_one_run_then(device, tmp_path):
    """A worker gets its next run's host side ready while another process times
    (Runner.get_ready_ahead): its turn uses what it made, so a spec edited in
    between does not change the run; what getting ready raised is that run's
    outcome; a different task than the one made ahead is made afresh."""
    from cubinrun.errors import EXIT_USAGE
    from cubinrun.pipeline.result import RunOptions
    from cubinrun.runs.expand import RunTask
    from cubinrun.runs.worker import Runner
    spec = spec_copy(tmp_path, "ahead.yaml", {"expect: x + y": "expect: 0 * x",
                                              "N: 1048576": "N: 4096"})
    runner = Runner(0, RunOptions(bench=False, progress=False))
    try:
        first, second = RunTask(0, str(spec)), RunTask(1, str(spec))
        runner.get_ready_ahead(first)
        text = spec.read_text()
        spec.write_text(text.replace("expect: 0 * x", "expect: x + y"))   # would fail now
        assert runner.execute(first).exit_code == EXIT_OK
        spec.write_text("kernel: [")
        runner.get_ready_ahead(second)
        spec.write_text(text)
        broken = runner.execute(second)
        assert broken.exit_code == EXIT_USAGE and "ahead.yaml" in broken.error
        runner.get_ready_ahead(first)
        assert runner.execute(second).exit_code == EXIT_OK     # not the one made ahead
    finally:
        runner.close()


def test_workers_get_their_next_run_ready_while_another_takes_its_turn(monkeypatch):
    """The schedule of `--processes 3` over three runs: every worker but the
    first is told run 0 before any turn; a worker is told its next run as soon
    as it hands back this one; turns never overlap (one at a time, in order)."""
    from cubinrun.runs.expand import RunTask
    from cubinrun.runs.processes import ProcessesExecutor
    from cubinrun.runs.worker import Ahead
    events = []

    class Worker:
        alive = True

        def __init__(self, k):
            self.k = k

        def tell(self, message):
            assert isinstance(message, Ahead)
            events.append(("ahead", self.k, message.task.index))

    def turn(self, k, task):
        events.append(("turn", k, task.index))
        return RunRecord(task, EXIT_OK, result={"timing": {"median_us": 1.0, "samples_us": [1.0]}})

    executor = object.__new__(ProcessesExecutor)
    executor.processes, executor.options = 3, type("O", (), {"keep_samples": False})()
    executor.workers = [Worker(k) for k in range(3)]
    monkeypatch.setattr(ProcessesExecutor, "_run_on", turn)
    monkeypatch.setattr("cubinrun.runs.processes.pooled", lambda records, keep: records[0])
    tasks = [RunTask(0, "a.yaml"), RunTask(1, "b.yaml", skipped="N < 4"), RunTask(2, "c.yaml")]
    assert [r.task.index for r in executor.run(tasks)] == [0, 1, 2]
    assert events == [
        ("ahead", 1, 0), ("ahead", 2, 0),
        ("turn", 0, 0), ("ahead", 0, 2), ("turn", 1, 0), ("ahead", 1, 2),
        ("turn", 2, 0), ("ahead", 2, 2),
        ("turn", 0, 2), ("turn", 1, 2), ("turn", 2, 2)]
