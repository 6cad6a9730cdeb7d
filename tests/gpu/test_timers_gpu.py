"""The timers, throttle detection, --max-noise and --energy on a real GPU
(`gpu` marker: skipped cleanly without one). The CPU tests (test_timers.py,
test_energy.py) prove the logic on the fake driver; these prove the driver,
CUPTI and NVML calls and that the numbers are plausible."""
import importlib.util
import json
import statistics
import subprocess
import sys

import pytest
from support.repo import REPO

pytestmark = pytest.mark.gpu

VECTOR_ADD = REPO / "configs" / "vector_add.yaml"
FAST = ["--warmup", "2", "--rep", "20"]


def launch_json(*args) -> dict:
    proc = subprocess.run([sys.executable, "-m", "cubinrun", "launch", "--json",
                           str(VECTOR_ADD), *FAST, *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout[-2000:]
    return json.loads(proc.stdout)


def test_events_record_the_timer_and_a_clock_per_sample():
    timing = launch_json("--set", "N=16777216")["timing"]
    assert timing["timer"] == "events" and timing["stopped"] == "budget"
    assert 500 < timing["sm_clock_min_mhz"] <= timing["sm_clock_mhz"] <= timing[
        "sm_clock_max_mhz"] < 3500
    assert timing["throttled_samples"] == 0          # an idle H200 does not throttle


def test_graph_timer_agrees_with_hot_events_on_a_long_kernel():
    """At 2^24 (~60 us) neither launch gaps nor the event offset matter: the
    graph's time per launch and the events' hot median agree within 3%."""
    events = launch_json("--set", "N=16777216", "--l2", "hot")["timing"]
    graph = launch_json("--set", "N=16777216", "--timer", "graph")["timing"]
    assert graph["timer"] == "graph" and graph["l2"] == "hot"
    assert graph["launches_per_sample"] >= 1 and graph["samples"] >= 10
    assert graph["median_us"] == pytest.approx(events["median_us"], rel=0.03)


def test_graph_timer_on_a_tiny_kernel_reads_less_than_one_launch_of_host_time():
    graph = launch_json("--set", "N=65536", "--timer", "graph")["timing"]
    assert graph["launches_per_sample"] > 100
    assert 0.5 < graph["median_us"] < 4.0            # launches from the host cost ~4 us each


@pytest.mark.skipif(importlib.util.find_spec("cupti") is None,
                    reason="needs cupti-python (pip install 'cubinrun[cupti]')")
@pytest.mark.parametrize("l2", ["cold", "hot"])
def test_cupti_timer_reads_kernel_records_close_to_events(l2):
    events = launch_json("--set", "N=16777216", "--l2", l2)["timing"]
    cupti = launch_json("--set", "N=16777216", "--l2", l2, "--timer", "cupti")["timing"]
    assert cupti["timer"] == "cupti" and cupti["event_offset_us"] is None
    assert cupti["samples"] >= 10
    assert cupti["median_us"] == pytest.approx(events["median_us"], rel=0.1)


def test_max_noise_stops_early_with_the_same_median():
    budget = launch_json("--set", "N=16777216", "--rep", "200", "--samples")["timing"]
    steady = launch_json("--set", "N=16777216", "--rep", "200", "--max-noise", "0.5%",
                         "--samples")["timing"]
    assert steady["stopped"] == "noise" and steady["noise"] <= 0.005
    assert steady["samples"] < budget["samples"]
    assert steady["median_us"] == pytest.approx(budget["median_us"], rel=0.02)


@pytest.mark.skipif(importlib.util.find_spec("pynvml") is None,
                    reason="needs nvidia-ml-py (pip install 'cubinrun[energy]')")
def test_energy_per_launch_is_repeatable_and_within_the_board_range():
    props = json.loads(subprocess.run([sys.executable, "-m", "cubinrun", "props", "--json",
                                       "--device", "0"], capture_output=True, text=True,
                                      cwd=REPO, timeout=120).stdout)["devices"][0]
    limit = props["power_limit_w"]
    assert limit and 50 < limit < 2000
    runs = [launch_json("--set", "N=268435456", "--no-bench", "--energy")["energy"]
            for _ in range(3)]
    joules = [r["j_per_launch"] for r in runs]
    assert all(20 < r["watts"] <= 1.1 * limit for r in runs), runs
    assert all(r["window_s"] >= 1.0 and r["sm_clock_mhz"] > 300 for r in runs), runs
    assert statistics.stdev(joules) / statistics.fmean(joules) < 0.03, joules
    # one launch moves 3 GiB; the board draws 100s of W for ~1 ms
    assert 0.05 < statistics.fmean(joules) < 5.0
