"""The timers (`--timer events|cupti|graph`), throttled samples, `--max-noise`
stopping: the pure rules, then the whole launch on the fake driver.

The fake's event pairs read 2 us plus 3 us per launch between their records;
a graph replay counts as all the launches it captured; the clock probe after
each sample reports the clocks `set_clocks` gives (tests/fakecuda)."""
from __future__ import annotations

import json
import re
import math
import statistics
import sys

import pytest
from fakecuda.device import FakeDevice

from cubinrun.gpu import driver
from cubinrun.cli import main
from cubinrun.limits import MAX_GRAPH_LAUNCHES
from cubinrun.gpu.timers import TIMERS, noise
from cubinrun.gpu.timers.graph import launches_per_graph
from cubinrun.gpu.timers.throttle import drop_throttled
from cubinrun.gpu.timing import MIN_SAMPLES, TimingOptions, batch_size
from support.repo import REPO

VECTOR_ADD = REPO / "configs" / "vector_add.yaml"


# --- throttled samples -------------------------------------------------------

def test_samples_below_75_percent_of_the_top_clock_are_dropped_and_counted():
    samples = [3.0, 3.1, 6.0, 3.0, 5.9]
    clocks = [1980.0, 1975.0, 990.0, 1980.0, 1400.0]      # 1485 is the floor
    kept, kept_clocks, dropped = drop_throttled(samples, clocks)
    assert kept == [3.0, 3.1, 3.0] and kept_clocks == [1980.0, 1975.0, 1980.0]
    assert dropped == 2


def test_a_sample_at_exactly_75_percent_stays_and_unknown_clocks_stay():
    kept, _, dropped = drop_throttled([1.0, 2.0, 3.0], [2000.0, 1500.0, None])
    assert kept == [1.0, 2.0, 3.0] and dropped == 0
    assert drop_throttled([1.0, 2.0], [None, None]) == ([1.0, 2.0], [None, None], 0)


def test_a_steady_lower_clock_is_not_throttling():
    """The reference is the run's own top clock, not the datasheet's."""
    assert drop_throttled([1.0] * 4, [1200.0, 1190.0, 1210.0, 1205.0])[2] == 0


# --- noise-based stopping ----------------------------------------------------

def test_the_median_noise_is_its_relative_standard_error_from_the_mad():
    samples = [9.0, 10.0, 11.0, 10.0, 12.0, 8.0, 10.0, 10.0]
    median = statistics.median(samples)
    mad = statistics.median(abs(s - median) for s in samples)
    expected = 1.2533 * 1.4826 * mad / math.sqrt(len(samples)) / median
    assert noise.median_noise(samples) == pytest.approx(expected)


def test_one_outlier_does_not_keep_a_stable_median_sampling():
    steady = [10.0 + 0.01 * (i % 3) for i in range(40)]
    assert noise.median_noise(steady + [500.0]) < 0.005
    # the standard deviation would say 12% noise
    spiky = steady + [500.0]
    assert statistics.stdev(spiky) / statistics.mean(spiky) > 0.1


def test_noise_shrinks_as_samples_grow_and_the_rule_needs_both_conditions():
    pattern = [9.0, 10.0, 11.0, 10.0]
    few, many = pattern * 3, pattern * 300
    assert noise.median_noise(many) < noise.median_noise(few)
    assert not noise.Rule(0.005, min_samples=10).met(few)            # too noisy
    assert noise.Rule(0.005, min_samples=10).met(many)
    assert not noise.Rule(1.0, min_samples=50).met(many[:20])        # too few
    assert noise.median_noise([5.0]) == math.inf
    assert noise.median_noise([0.0, 0.0]) == math.inf


def test_batches_are_a_tenth_of_the_budget_under_max_noise():
    budget = TimingOptions()
    assert batch_size(5000, budget) == 64                  # no rule: the usual batches
    noisy = TimingOptions(max_noise=0.005, min_samples=10)
    assert batch_size(5000, noisy) == 64 and batch_size(100, noisy) == 10
    assert batch_size(100, TimingOptions(max_noise=0.005, min_samples=30)) == 30


def test_graph_length_covers_about_a_millisecond_within_bounds():
    assert launches_per_graph(0.002) == 500
    assert launches_per_graph(5.0) == 1
    assert launches_per_graph(0.0) == launches_per_graph(1e-9) == MAX_GRAPH_LAUNCHES


# --- on the fake driver --------------------------------------------------------

def launch(capsys, *args) -> tuple[int, dict | None, str]:
    with pytest.raises(SystemExit) as done:
        main(["launch", "--json", str(VECTOR_ADD), "--warmup", "1", *map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, (json.loads(out) if out else None), err


def test_events_is_the_default_timer_and_is_recorded(device, capsys):
    code, report, _ = launch(capsys, "--rep", "1")
    timing = report["timing"]
    assert code == 1 and timing["timer"] == "events" and timing["stopped"] == "budget"
    assert timing["median_us"] == pytest.approx(FakeDevice.KERNEL_US)
    assert timing["throttled_samples"] == 0 and timing["launches_per_sample"] == 1
    assert timing["sm_clock_mhz"] == pytest.approx(1980.0)    # the fake probe's clock
    assert timing["noise"] == 0.0                              # every sample is 3 us
    assert TIMERS == ("events", "cupti", "graph")


def test_graph_timer_replays_a_captured_graph_per_sample(device, fake_libcuda, capsys):
    code, report, _ = launch(capsys, "--timer", "graph", "--rep", "2")
    timing = report["timing"]
    assert code == 1 and timing["timer"] == "graph" and timing["l2"] == "hot"
    # a replay of L launches reads 2 + (3 - 0.9)L us: each node starts while the
    # one before drains. Less the offset, over L, plus the 0.9 us start-up an
    # empty kernel shows (3 us a launch in a stream, 2.1 us a node): 3 us
    assert timing["median_us"] == pytest.approx(FakeDevice.KERNEL_US)
    assert timing["graph_startup_us"] == pytest.approx(FakeDevice.GRAPH_HIDDEN_US)
    assert timing["launches_per_sample"] > 1
    calls = device.calls
    # two graphs: the empty kernels measuring the start-up, then the kernel's
    assert calls.count("cuStreamBeginCapture") == calls.count("cuStreamEndCapture") == 2
    assert calls.count("cuGraphLaunch") > timing["samples"]          # + estimate, upload
    assert fake_libcuda.graphs_live == 0 and not fake_libcuda.capturing


def test_graph_timer_with_raw_events_reads_the_time_per_node(device, capsys):
    code, report, _ = launch(capsys, "--timer", "graph", "--rep", "2", "--raw-events")
    timing = report["timing"]
    nodes = timing["launches_per_sample"]
    per_node = FakeDevice.KERNEL_US - FakeDevice.GRAPH_HIDDEN_US
    assert timing["median_us"] == pytest.approx(per_node + FakeDevice.EVENT_OFFSET_US / nodes)
    assert timing["graph_startup_us"] is None and timing["event_offset_us"] is None


def test_a_launch_failing_during_capture_ends_the_capture(device, fake_libcuda):
    from fakecuda import CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES

    from cubinrun.launcher import load_launcher
    from cubinrun.gpu.timers.graph import CapturedLaunches
    fake_libcuda.set_param_sizes([])
    launcher = load_launcher([], 0)
    config = launcher.Config(0xF00D, block=(1, 1, 1))
    fake_libcuda.fail_launch(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, after=3)
    with pytest.raises(launcher.CudaCallError):
        CapturedLaunches(lambda stream: launcher.launch(config, 1, 1, 1, stream),
                         driver.create_stream(), 10)
    assert not fake_libcuda.capturing and fake_libcuda.graphs_live == 0


def test_graph_timer_refuses_a_cold_l2(device, capsys):
    code, report, err = launch(capsys, "--timer", "graph", "--l2", "cold")
    assert code == 2 and report is None and "L2 stays hot" in err


def test_throttled_samples_are_dropped_and_counted(device, fake_libcuda, capsys):
    fake_libcuda.set_clocks([1980.0, 1980.0, 1980.0, 900.0])      # every 4th sample throttled
    code, report, _ = launch(capsys, "--rep", "2", "--samples")
    timing = report["timing"]
    total = timing["samples"] + timing["throttled_samples"]
    assert timing["throttled_samples"] == pytest.approx(total / 4, abs=1)
    assert timing["sm_clock_min_mhz"] == pytest.approx(1980.0)
    assert len(timing["samples_us"]) == len(timing["sm_clocks_mhz"]) == timing["samples"]
    assert set(timing["sm_clocks_mhz"]) == {1980.0}


def test_max_noise_stops_a_steady_kernel_early(device, capsys):
    code, full, _ = launch(capsys, "--rep", "5")
    device.calls.clear()
    code, steady, _ = launch(capsys, "--rep", "5", "--max-noise", "0.5%")
    assert steady["timing"]["stopped"] == "noise"
    # the first batch is read while the second runs, then sampling stops
    assert steady["timing"]["samples"] == 2 * max(MIN_SAMPLES, -(-full["timing"]["samples"] // 10))
    assert steady["timing"]["samples"] < full["timing"]["samples"] / 4
    assert steady["timing"]["median_us"] == full["timing"]["median_us"]
    code, least, _ = launch(capsys, "--rep", "5", "--max-noise", "0.5%", "--min-samples", "200")
    assert least["timing"]["samples"] >= 200


def test_max_noise_reads_each_batch_while_the_next_one_runs(device, monkeypatch, capsys):
    """The GPU never waits for the host between batches: no stream is synchronised
    while sampling; a batch's last event is waited for once the next is queued."""
    calls = []
    from cubinrun.gpu import timing
    real_sample = timing.sample

    def watched(*args, **kwargs):
        device.calls.clear()
        try:
            return real_sample(*args, **kwargs)
        finally:
            calls.append(list(device.calls))
    monkeypatch.setattr(noise, "median_noise", lambda samples: 1.0)      # never steady
    for module in (timing, sys.modules["cubinrun.gpu.timers.events"]):
        monkeypatch.setattr(module, "sample", watched)
    code, report, _ = launch(capsys, "--rep", "2", "--max-noise", "0.5%")
    sampled = calls[-1]                         # the timed samples (the last sample() call)
    assert code == 1 and report["timing"]["stopped"] == "budget"
    assert sampled.count("cuEventSynchronize") >= 3         # one per batch but the last
    assert sampled.count("cuStreamSynchronize") == 1 and sampled[-1] != "cuEventSynchronize"
    last_sync = len(sampled) - sampled[::-1].index("cuEventSynchronize") - 1
    assert "cuStreamSynchronize" in sampled[last_sync:]     # only once, after every batch


def test_max_noise_that_is_never_met_runs_the_whole_budget(device, monkeypatch, capsys):
    monkeypatch.setattr(noise, "median_noise", lambda samples: 1.0)
    code, full, _ = launch(capsys, "--rep", "2")
    code, noisy, _ = launch(capsys, "--rep", "2", "--max-noise", "0.5%")
    assert noisy["timing"]["stopped"] == "budget"
    assert noisy["timing"]["samples"] == full["timing"]["samples"]


@pytest.mark.parametrize("args, message", [
    (["--max-noise", "0"], "must be above 0%"),
    (["--max-noise", "half"], "expected a percentage"),
    (["--max-noise", "5"], "write 5% for a percentage"),
    (["--min-samples", "0"], "--min-samples"),
    (["--timer", "cupti", "--raw-events"], "uses no event pairs"),
    (["--no-bench", "--timer", "graph"], "--no-bench times nothing"),
    (["--sanitize", "--energy"], "--sanitize runs untimed"),
])
def test_bad_measurement_flags_are_usage_errors(device, capsys, args, message):
    code, report, err = launch(capsys, *args)
    assert code == 2 and report is None and message in err
    assert len(err.strip().splitlines()) == 1


def test_cupti_timer_without_cupti_python_is_exit_4_with_the_pip_line(device, monkeypatch,
                                                                       capsys):
    from cubinrun.gpu.timers import cupti
    monkeypatch.setitem(sys.modules, "cupti", None)          # import cupti fails
    cupti._cupti.cache_clear()
    try:
        code, report, err = launch(capsys, "--timer", "cupti")
    finally:
        cupti._cupti.cache_clear()
    assert code == 4 and report["status"] == "CUDA error"
    assert "pip install 'cubinrun[cupti]'" in report["error"]["message"]
    assert "pip install 'cubinrun[cupti]'" in err and len(err.strip().splitlines()) == 1


class FakeCupti:
    """cupti-python's activity API, answering with records the test gives."""

    class ActivityKind:
        CONCURRENT_KERNEL = 10

    class cuptiError(Exception):
        pass

    class Record:
        def __init__(self, start, end, name, kind=10):
            self.start, self.end, self.name, self.kind = start, end, name, kind

    def __init__(self):
        self.pending: list = []
        self.enabled = False
        self.callbacks = None

    def activity_register_callbacks(self, requested, completed):
        self.callbacks = (requested, completed)

    def activity_enable(self, kind):
        self.enabled = True

    def activity_disable(self, kind):
        self.enabled = False

    def activity_flush_all(self, flag):
        assert self.callbacks[0]() == (8 << 20, 0)
        records, self.pending = self.pending, []
        self.callbacks[1](records)


def test_cupti_records_keep_the_kernels_launches_in_gpu_order(monkeypatch):
    from cubinrun.gpu.timers import cupti
    fake = FakeCupti()
    monkeypatch.setattr(cupti, "_cupti", lambda: fake)
    monkeypatch.setattr(cupti.KernelRecords, "_registered", False)
    R = FakeCupti.Record
    with cupti.KernelRecords() as records:
        assert fake.enabled
        fake.pending += [R(5000, 8000, "add_kernel"), R(1000, 1200, "cubinrun_l2_flush"),
                         R(2000, 4500, "add_kernel"), R(100, 900, "memcpy", kind=1)]
        records.flush()
        fake.pending += [R(9000, 9300, "cubinrun_clock"), R(9500, 12500, "add_kernel")]
    assert not fake.enabled                      # leaving flushes and disables
    assert records.durations_us() == [2.5, 3.0, 3.0]


def test_cupti_errors_name_the_call(monkeypatch):
    from cubinrun.errors import CudaError
    from cubinrun.gpu.timers import cupti
    fake = FakeCupti()

    def refuse(kind):
        raise FakeCupti.cuptiError("CUPTI_ERROR_NOT_INITIALIZED")
    fake.activity_enable = refuse
    monkeypatch.setattr(cupti, "_cupti", lambda: fake)
    with pytest.raises(CudaError, match="CUPTI activity_enable failed: CUPTI_ERROR_NOT_INIT"):
        cupti.call("activity_enable", 10)


def test_cupti_timer_takes_each_launchs_record_as_its_sample(device, fake_libcuda, monkeypatch):
    """The whole cupti timer on the fake driver: each launch of the measured
    kernel leaves a record (3 us while sampling) among the timing kernels' own."""
    from cubinrun.gpu.timers import cupti
    from cubinrun.gpu.timing import TimingKernels
    fake = FakeCupti()
    monkeypatch.setattr(cupti, "_cupti", lambda: fake)
    monkeypatch.setattr(cupti.KernelRecords, "_registered", False)
    fake_libcuda.set_param_sizes([])
    clock = iter(range(0, 10**9, 10_000))

    def launch(stream):
        if fake.enabled:                          # records exist only while enabled
            start = next(clock)
            fake.pending += [FakeCupti.Record(start, start + 3000, "add_kernel"),
                             FakeCupti.Record(start + 4000, start + 6000, "cubinrun_clock")]
    kernels = TimingKernels(driver.open_device(0))
    options = TimingOptions(warmup_ms=0.1, rep_ms=0.2, l2="hot", timer="cupti")
    timed = cupti.measure(launch, driver.create_stream(), kernels, options)
    assert timed.timer == "cupti" and timed.event_offset_us is None
    assert len(timed.samples_us) >= MIN_SAMPLES and set(timed.samples_us) == {3.0}
    assert not fake.enabled

    def lossy(stream):                            # a record CUPTI never delivered
        launch(stream)
        if fake.enabled and next(clock) % 7 == 0:
            fake.pending.pop(-2)
    from cubinrun.errors import CudaError
    with pytest.raises(CudaError, match="CUPTI recorded .* launches of the kernel for"):
        cupti.measure(lossy, driver.create_stream(), kernels, options)


def test_the_report_says_how_the_samples_were_taken(device, fake_libcuda, capsys):
    with pytest.raises(SystemExit):
        main(["launch", str(VECTOR_ADD), "--warmup", "1", "--rep", "2", "--timer", "graph"])
    out = capsys.readouterr().out
    assert re.search(r"\d+ samples, L2 hot, CUDA graph of \d+ launches per sample, event pair "
                     r"offset 2.00 us subtracted", out), out
    fake_libcuda.set_clocks([1980.0, 900.0])
    with pytest.raises(SystemExit):
        main(["launch", str(VECTOR_ADD), "--warmup", "1", "--rep", "2", "--max-noise", "1%"])
    out = capsys.readouterr().out
    assert re.search(r"L2 cold, event pair offset 2.00 us subtracted, stopped at 0.00% noise, "
                     r"\d+ throttled samples dropped", out), out


def test_a_bimodal_kernels_median_is_not_called_steady_by_the_mad_alone():
    """Half the samples at one clock step, half at the next: the MAD says the
    median is steady, but it jumps between the two modes; the bootstrap sees it."""
    bimodal = [2.00, 2.10] * 200
    assert noise.median_noise(bimodal) < 0.005
    assert noise.bootstrap_noise(bimodal) > 0.01
    assert not noise.Rule(0.005, 10).met(bimodal)
    steady = [2.0 + 0.01 * ((7 * i) % 11 - 5) / 5 for i in range(400)]
    assert noise.Rule(0.005, 10).met(steady)


def test_a_refused_bootstrap_waits_for_half_as_many_samples_again(monkeypatch):
    asked = []
    monkeypatch.setattr(noise, "bootstrap_noise", lambda s: asked.append(len(s)) or 1.0)
    rule = noise.Rule(0.005, 10)
    steady = [2.0] * 1000
    for n in range(100, 1001, 50):
        assert not rule.met(steady[:n])
    assert asked == [100, 150, 250, 400, 600, 900]
