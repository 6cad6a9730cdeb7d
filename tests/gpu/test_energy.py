"""`--energy`: the window between two updates of NVML's energy counter, on a
simulated counter; the whole launch on the fake driver with a fake NVML; the
energy fields in every result file and in `compare`."""
from __future__ import annotations

import csv
import io
import json
import math
import xml.etree.ElementTree as ET

import pytest
from fakecuda.device import FakeDevice

from cubinrun.gpu import driver, energy, nvml
from cubinrun.cli import main
from cubinrun.errors import CudaError
from cubinrun.results.compare import compare_pair
from support.repo import REPO

VECTOR_ADD = REPO / "configs" / "vector_add.yaml"


class Counter:
    """NVML's energy counter as the driver keeps it: the board's energy (mJ),
    updated every `period` s, on a clock that each poll advances by `poll` s."""

    def __init__(self, watts: float, period: float, poll: float, phase: float = 0.0):
        self.watts, self.period, self.poll = watts, period, poll
        self.t = phase

    def now(self) -> float:
        return self.t

    def keep_busy(self) -> None:
        self.t += self.poll

    def read_mj(self) -> int:
        updated = math.floor(self.t / self.period) * self.period
        return int(self.watts * updated * 1000)


@pytest.mark.parametrize("phase", [0.0, 0.013, 0.029, 0.047])
def test_the_window_between_counter_updates_reads_the_power(phase):
    counter = Counter(watts=528.0, period=0.05, poll=0.002, phase=phase)
    window = energy.edge_window(counter.read_mj, counter.now, counter.keep_busy,
                                lambda: 1980.0, window_s=1.0)
    assert window.seconds >= 1.0 and window.clocks_mhz and set(window.clocks_mhz) == {1980.0}
    # both ends are detected within one poll of an update: at most 2 ms of 1 s
    assert window.watts == pytest.approx(528.0, rel=0.005)


def test_reading_at_arbitrary_times_is_off_by_up_to_one_update_period():
    """Why the edges: read, about 1 s (as the host's timer gives it), read, as
    the naive method does."""
    errors = []
    for phase in (0.001, 0.02, 0.049):
        for seconds in (1.0, 1.01, 1.04):
            counter = Counter(watts=528.0, period=0.05, poll=0.002, phase=phase)
            start = counter.read_mj()
            counter.t += seconds
            errors.append(abs((counter.read_mj() - start) / 1000 / seconds / 528.0 - 1))
    assert max(errors) > 0.03                   # up to 50 ms of 1 s


def test_a_counter_that_never_moves_is_an_error_not_a_hang():
    counter = Counter(watts=0.0, period=0.05, poll=0.01)
    with pytest.raises(CudaError, match="did not change in 2 s"):
        energy.edge_window(counter.read_mj, counter.now, counter.keep_busy, lambda: 0.0,
                           window_s=1.0)


# --- NVML through its one error check --------------------------------------------

class FakePynvml:
    NVML_CLOCK_SM = 1

    class NVMLError(Exception):
        pass

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if not uuid.startswith("GPU-"):
            raise self.NVMLError("Not Found")
        return ("handle", uuid)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700_000                          # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        raise self.NVMLError("Not Supported")


@pytest.fixture
def fake_pynvml(monkeypatch):
    fake = FakePynvml()
    monkeypatch.setattr(nvml, "_pynvml", lambda: fake)
    nvml._init.cache_clear()
    yield fake
    nvml._init.cache_clear()


def test_nvml_errors_name_the_call(fake_pynvml):
    handle = nvml.device("GPU-fa")
    assert nvml.power_limit_w(handle) == 700.0
    with pytest.raises(CudaError, match="nvmlDeviceGetTotalEnergyConsumption failed: Not Supp"):
        nvml.energy_mj(handle)
    with pytest.raises(CudaError, match="nvmlDeviceGetHandleByUUID failed: Not Found"):
        nvml.device("bad")


def test_props_shows_the_power_limit_when_nvml_answers(fake_pynvml, monkeypatch):
    from cubinrun.gpu import props
    monkeypatch.setattr(nvml, "available", lambda: True)
    assert props.power_limit_w("GPU-fa") == 700.0
    fake_pynvml.nvmlDeviceGetHandleByUUID = lambda uuid: (_ for _ in ()).throw(
        FakePynvml.NVMLError("Unknown Error"))
    assert props.power_limit_w("GPU-fa") is None            # props never fails for it
    monkeypatch.setattr(nvml, "available", lambda: False)
    assert props.power_limit_w("GPU-fa") is None


# --- the whole launch on the fake driver ---------------------------------------------

WATTS = 400.0


class VirtualTime:
    """The energy module's clock: each chunk of launches takes 2 ms of it."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def fake_nvml(monkeypatch):
    """A board drawing 400 W whose counter updates every 20 ms, on a virtual
    clock (a loaded CI machine must not move the edges); a 0.3 s window."""
    clock = VirtualTime()
    monkeypatch.setattr(energy, "time", clock)
    keep_busy = energy.BackToBack.keep_busy

    def busy(self):
        keep_busy(self)
        clock.now += 0.002
    monkeypatch.setattr(energy.BackToBack, "keep_busy", busy)
    monkeypatch.setattr(energy, "WARM_S", 0.02)
    monkeypatch.setattr(energy, "WINDOW_S", 0.3)
    monkeypatch.setattr(nvml, "device", lambda uuid: uuid)
    monkeypatch.setattr(nvml, "energy_mj", lambda handle: int(
        WATTS * 1000 * math.floor(clock.now / 0.02) * 0.02))
    monkeypatch.setattr(nvml, "sm_clock_mhz", lambda handle: 1755)


def launch(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["launch", str(VECTOR_ADD), "--warmup", "1", "--rep", "1", *map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, out, err


def test_energy_per_launch_is_power_times_a_launchs_time(device, fake_nvml, capsys):
    code, out, _ = launch(capsys, "--json", "--energy")
    e = json.loads(out)["energy"]
    assert e["watts"] == pytest.approx(WATTS, rel=0.01)     # edges within one 2 ms chunk
    assert e["sm_clock_mhz"] == 1755 and e["window_s"] >= 0.3
    # replayed from graphs, the fake's launches take 3 us less the 0.9 us a graph
    # hides of each: ~2.1 us each
    per_node = FakeDevice.KERNEL_US - FakeDevice.GRAPH_HIDDEN_US
    assert e["launch_us"] == pytest.approx(per_node, rel=0.01)
    assert e["j_per_launch"] == pytest.approx(e["watts"] * e["launch_us"] * 1e-6)
    assert e["graph"] is True                   # replayed from a captured graph


def test_a_kernel_the_driver_will_not_capture_is_launched_directly(device, fake_nvml,
                                                                    fake_libcuda, capsys):
    def refuse(stream, mode):
        raise driver.cuda_error("cuStreamBeginCapture", 900)   # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    device.cuStreamBeginCapture = refuse
    code, out, _ = launch(capsys, "--json", "--energy", "--no-bench")
    e = json.loads(out)["energy"]
    assert e["graph"] is False and e["watts"] == pytest.approx(WATTS, rel=0.01)
    assert e["launch_us"] == pytest.approx(FakeDevice.KERNEL_US, rel=0.01)
    assert fake_libcuda.graphs_live == 0


def test_the_report_says_the_energy(device, fake_nvml, capsys):
    code, out, _ = launch(capsys, "--energy")
    assert "J per launch" in out and "W average" in out and "SM clock 1755 MHz" in out


def test_every_result_file_carries_the_energy(device, fake_nvml, tmp_path, capsys):
    files = {kind: tmp_path / f"r.{kind}" for kind in ("jsonl", "csv", "markdown", "junit")}
    launch(capsys, "--energy", *[a for kind, path in files.items()
                                 for a in (f"--{kind}", path)])
    line = json.loads(files["jsonl"].read_text())
    assert line["energy"]["j_per_launch"] > 0 and line["timing"]["timer"] == "events"
    row = next(csv.DictReader(io.StringIO(files["csv"].read_text())))
    assert float(row["j_per_launch"]) == pytest.approx(line["energy"]["j_per_launch"])
    assert float(row["watts"]) > 0 and row["timer"] == "events" and row["throttled_samples"] == "0"
    assert "| J/launch | W |" in files["markdown"].read_text()
    props = {p.get("name"): p.get("value")
             for p in ET.parse(files["junit"]).iter("property")}
    assert float(props["j_per_launch"]) > 0 and float(props["watts"]) > 0


def test_energy_without_nvidia_ml_py_is_exit_4_with_the_pip_line(device, monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "pynvml", None)
    nvml._pynvml.cache_clear()
    try:
        code, _, err = launch(capsys, "--energy")
    finally:
        nvml._pynvml.cache_clear()
    assert code == 4 and "pip install 'cubinrun[energy]'" in err
    assert len(err.strip().splitlines()) == 1


# --- compare ----------------------------------------------------------------------------

def result(median: float, joules: float | None) -> dict:
    return {"spec": "a.yaml", "kernel": "k", "point": {},
            "timing": {"median_us": median, "std_us": 0.01, "samples": 100},
            "energy": None if joules is None else {"j_per_launch": joules, "watts": 500.0}}


def test_compare_reports_energy_as_a_second_metric():
    same_time_more_energy = compare_pair(result(100.0, 0.010), result(100.0, 0.012))
    assert same_time_more_energy.verdict == "SAME"             # energy never gates (100 us: one
    # process a side can be SAME, process_noise.py)
    assert same_time_more_energy.energy_ratio == pytest.approx(1.2)
    assert same_time_more_energy.energy_verdict == "MORE"
    assert compare_pair(result(10.0, 0.010), result(10.0, 0.0101)).energy_verdict == "SAME"
    assert compare_pair(result(10.0, 0.010), result(10.0, 0.008)).energy_verdict == "LESS"
    one_sided = compare_pair(result(10.0, None), result(10.0, 0.01))
    assert one_sided.energy_ratio is None and one_sided.energy_verdict is None


def test_compare_command_shows_the_energy_columns(tmp_path, capsys):
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    base.write_text(json.dumps(result(10.0, 0.010)))
    new.write_text(json.dumps(result(10.0, 0.012)))
    with pytest.raises(SystemExit) as done:
        main(["compare", str(base), str(new), "--json"])
    comparison = json.loads(capsys.readouterr().out)["comparisons"][0]
    assert done.value.code == 0 and comparison["energy_verdict"] == "MORE"
    with pytest.raises(SystemExit):
        main(["compare", str(base), str(new)])
    out = capsys.readouterr().out
    assert "J/launch ratio" in out and "1.200" in out and "MORE" in out


def test_a_bad_energy_field_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**result(10.0, None), "energy": {"j_per_launch": "a lot"}}))
    with pytest.raises(SystemExit) as done:
        main(["compare", str(bad), str(bad)])
    assert done.value.code == 2 and "`energy.j_per_launch` should be a number" in \
        capsys.readouterr().err
