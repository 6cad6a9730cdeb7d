"""End to end on a real GPU (`gpu` marker: skipped cleanly without one).

Each sample spec runs through the CLI as a user would: build, launch, check,
time; the JSON report is the contract scripts rely on.
"""
import json
import subprocess
import sys

import pytest
from support.repo import REPO

pytestmark = pytest.mark.gpu

CONFIGS = REPO / "configs"
NOT_PASSING_BY_DESIGN = {"fault.yaml"}
FAST = ["--warmup", "2", "--rep", "10"]


def cubinrun(*args, check_exit=None):
    proc = subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    if check_exit is not None:
        assert proc.returncode == check_exit, proc.stderr + proc.stdout
    return proc


def launch_json(config, *extra):
    proc = cubinrun("launch", "--json", CONFIGS / config, *FAST, *extra, check_exit=0)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("config", sorted(p.name for p in CONFIGS.glob("*.yaml")
                                          if p.name not in NOT_PASSING_BY_DESIGN))
def test_every_config_runs_and_passes(config):
    report = launch_json(config)
    assert report["check"]["passed"] in (True, None), report["check"]
    assert report["timing"]["samples"] >= 10
    assert 0 < report["timing"]["min_us"] <= report["timing"]["median_us"] <= report["timing"]["max_us"]
    assert report["device"]["name"]


def test_scalars_round_trip_every_type_bit_exact():
    report = launch_json("scalars.yaml", "--no-bench")
    outputs = report["check"]["outputs"]
    assert report["check"]["passed"] is True
    assert len(outputs) >= 28 and all(o["mismatches"] == 0 for o in outputs.values())


def test_structs_and_vectors_by_value_reach_the_kernel_intact():
    # kernels/structs.cu folds every by-value member into a digit of vec_sum or
    # taps_sum and runs a saxpy through the struct's pointers
    report = launch_json("structs.yaml", "--no-bench")
    outputs = report["check"]["outputs"]
    assert report["check"]["passed"] is True and set(outputs) == {"p[3]", "vec_sum", "taps_sum"}
    assert all(o["mismatches"] == 0 for o in outputs.values())


def test_a_kernel_without_parameters_runs():
    report = launch_json("empty0.yaml")
    assert report["kernel"] == "empty0" and report["check"]["passed"] is None
    assert report["timing"]["samples"] >= 10


def test_a_faulting_kernel_exits_4_with_the_error_name():
    proc = cubinrun("launch", CONFIGS / "fault.yaml", "--no-bench")
    assert proc.returncode == 4
    last = proc.stderr.strip().splitlines()[-1]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in last and "fault_kernel" in last
    assert "Traceback" not in proc.stderr


def test_twice_the_work_takes_about_twice_the_time():
    times = {}
    for iters in (8192, 16384):
        report = launch_json("work.yaml", "--set", f"ITERS={iters}", "--l2", "hot")
        times[iters] = report["timing"]["median_us"]
    assert 1.7 < times[16384] / times[8192] < 2.3, times


def test_empty_grid_launches_nothing_and_says_so():
    report = launch_json("vector_add.yaml", "--set", "N=0")
    assert report["launched"] is False and report["timing"] is None


def test_shared_memory_over_the_device_limit_is_a_spec_error():
    proc = cubinrun("launch", CONFIGS / "smem_big.yaml", "--set", "CHUNK=60000", "--no-bench")
    assert proc.returncode == 2
    assert "launch.shared: 240000 bytes" in proc.stderr and "232448" in proc.stderr


def test_props_table_and_json():
    proc = cubinrun("props", "--json", check_exit=0)
    devices = json.loads(proc.stdout)["devices"]
    assert devices and devices[0]["sm_count"] > 0 and devices[0]["peak_bandwidth_gbps"] > 100
    assert devices[0]["arch"].startswith("sm_")
    table = cubinrun("props", check_exit=0).stdout
    assert devices[0]["name"] in table and "peak memory bandwidth" in table


def launch_with_peak_rss(tmp_path, *args):
    """`cubinrun launch --json ARGS` in a child: (exit code, report, its own peak RSS)."""
    import os
    out = tmp_path / "report.json"
    with open(out, "wb") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "cubinrun", "launch", "--json", *args],
                                cwd=REPO, stdout=stdout, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)          # this child's own peak RSS
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 1), proc.stderr.read().decode()
    return code, json.loads(out.read_text()), usage.ru_maxrss * 1024


def test_a_quarter_billion_elements_pass_within_the_host_memory_bound(tmp_path):
    """2^28 fp32 elements (3 GiB of buffers): the check passes and the process's peak
    RSS stays within 1.25x the buffers' bytes (inputs are made and checked block by
    block through pinned slots, never whole)."""
    n = 1 << 28
    code, report, rss = launch_with_peak_rss(tmp_path, "--no-bench",
                                             CONFIGS / "vector_add.yaml", "--set", f"N={n}")
    assert code == 0 and report["check"]["passed"] is True
    assert report["check"]["outputs"]["out"]["count"] == n
    assert report["guards"]["passed"] is True       # bands around buffers the slots filled
    assert set(report["stages_s"]) == {"init", "upload", "launch", "download", "check"}
    assert rss <= 1.25 * 12 * n, rss


def test_repeat_on_big_buffers_stays_within_the_host_memory_bound(tmp_path):
    """--repeat 3 at 2^26: every run's inputs made again and every buffer compared by
    digests of its slots, run 1 kept on the device: the same host bound as one launch."""
    n = 1 << 26
    code, report, rss = launch_with_peak_rss(tmp_path, "--no-bench", "--repeat", "3",
                                             CONFIGS / "vector_add.yaml", "--set", f"N={n}")
    assert code == 0 and report["repeat"]["passed"] is True, report.get("repeat")
    assert report["repeat"]["runs"] == 3 and report["guards"]["passed"] is True
    assert rss <= 1.25 * 12 * n, rss


# --- many runs in one command (contract v2, section 3) ------------------------

def test_a_kernel_fault_between_two_good_specs_ends_only_its_own_run(tmp_path):
    junit = tmp_path / "j.xml"
    proc = cubinrun("launch", "--json", CONFIGS / "vector_add.yaml", CONFIGS / "fault.yaml",
                    CONFIGS / "vector_add_tuple.yaml", *FAST, "--junit", junit)
    assert proc.returncode == 4, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert [r["exit_code"] for r in results] == [0, 4, 0]
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in results[1]["error"]["message"]
    assert results[2]["check"]["passed"] is True and results[2]["timing"]["samples"] >= 10
    assert "Traceback" not in proc.stderr and junit.read_text().count("<error") == 1


def test_a_sweep_in_one_command_measures_every_point_and_the_clock():
    proc = cubinrun("launch", "--json", "--samples", CONFIGS / "vector_add.yaml",
                    "--axis", "N[pow2]=[16:24:4]", *FAST)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert [r["point"]["N"] for r in results] == [2**16, 2**20, 2**24]
    medians = [r["timing"]["median_us"] for r in results]
    assert medians == sorted(medians) and medians[2] > 5 * medians[0]
    for r in results:
        timing = r["timing"]
        assert len(timing["samples_us"]) == timing["samples"]
        assert 500 < timing["sm_clock_mhz"] < 3500, timing
        assert r["check"]["passed"] is True


def test_two_runs_of_the_same_spec_compare_same(tmp_path):
    files = []
    for name in ("base.json", "new.json"):
        proc = cubinrun("launch", "--json", "--samples", CONFIGS / "vector_add.yaml",
                        "--set", "N=16777216", "--rep", "200", check_exit=0)
        files.append(tmp_path / name)
        files[-1].write_text(proc.stdout)
    proc = cubinrun("compare", "--json", *files)
    comparison = json.loads(proc.stdout)["comparisons"][0]
    assert proc.returncode == 0 and comparison["verdict"] == "SAME", comparison


TRITON_SAMPLES = ["triton_matmul.yaml", "triton_softmax.yaml", "triton_layer_norm.yaml"]


@pytest.mark.parametrize("config", TRITON_SAMPLES)
def test_triton_39_samples_pass_their_numpy_references(config):
    report = launch_json(config)
    assert report["check"]["passed"] is True, report["check"]
    if config == "triton_matmul.yaml":
        assert report["shared"] == 98304            # 96 KiB: opted in above 48 KiB
    if config == "triton_softmax.yaml":             # persistent: 4 programs per SM
        props = json.loads(cubinrun("props", "--json", check_exit=0).stdout)["devices"][0]
        assert report["grid"] == [min(4 * props["sm_count"], 800), 1, 1]


@pytest.mark.parametrize("config, override", [
    ("triton_matmul.yaml", "M=500"), ("triton_softmax.yaml", "ROWS=810"),
    ("triton_add.yaml", "N=1000"),
])
def test_a_broken_triton_specialization_is_refused_before_launch(config, override):
    proc = cubinrun("launch", CONFIGS / config, "--set", override, *FAST, check_exit=2)
    assert "not a multiple of 16" in proc.stderr and "tt.divisibility = 16" in proc.stderr


def test_arch_defaults_match_this_device_when_it_is_the_known_one():
    from cubinrun.specfile.device_values import KNOWN_GPUS
    props = json.loads(cubinrun("props", "--json", check_exit=0).stdout)["devices"][0]
    arch = "sm_" + props["arch"].removeprefix("sm_").rstrip("af")
    if arch not in KNOWN_GPUS or not any(n in props["name"] for n in ("H100", "H200", "A100")):
        pytest.skip(f"no defaults to compare for {props['name']}")
    _, values = KNOWN_GPUS[arch]
    if "H200" in props["name"]:         # sm_90's defaults are an H100's; an H200 has 60 MiB L2
        values = {**values, "l2_bytes": 60 << 20}
    assert {"sm_count": props["sm_count"], "l2_bytes": props["l2_bytes"],
            "max_shared_optin": props["shared_per_block_optin"],
            "warp_size": props["warp_size"]} == values


def test_a_sweep_with_string_axes_constraints_and_invalid_points_passes_every_check():
    # configs/sweeps/tiled_copy.yaml: 48 points, 4 skipped by its constraints, 4 invalid
    # (a shared tile above 48 KiB of static shared memory), 40 compiled, run and checked
    proc = cubinrun("launch", "--json", CONFIGS / "sweeps" / "tiled_copy.yaml", *FAST,
                    check_exit=0)
    results = json.loads(proc.stdout)["results"]
    statuses = [r["status"] for r in results]
    assert (statuses.count("ok"), statuses.count("skipped"), statuses.count("invalid")) == \
        (40, 4, 4), statuses
    for r in results:
        if r["status"] == "ok":
            assert r["check"]["passed"] is True and r["timing"]["median_us"] > 0, r["point"]
        elif r["status"] == "invalid":
            assert r["point"]["TILE"] == 128 and r["point"]["VARIANT"] == "shared"
            assert "bytes of shared data" in r["error"]["message"]
    fp64 = next(r for r in results if r["status"] == "ok" and r["point"]["T"] == "fp64")
    seconds = fp64["timing"]["median_us"] * 1e-6         # bench.bytes follows T: 8-byte elements
    assert fp64["throughput"]["gbps"] == pytest.approx(2 * 2048 * 1000 * 8 / seconds / 1e9)
