"""The debugging aids on a real GPU (`gpu` marker): each sample bad kernel
(configs/bugs/) is caught by the tool meant for it, the good samples pass
them all, and reproducers pass on the vector add, the scalars, a cluster and
a Triton TMA kernel. compute-sanitizer and ncu come from the CUDA toolkit."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.repo import REPO

pytestmark = pytest.mark.gpu

CONFIGS = REPO / "configs"
BUGS = CONFIGS / "bugs"
GOOD = sorted(p.name for p in CONFIGS.glob("*.yaml") if p.name != "fault.yaml")
TOOLKIT = Path("/usr/local/cuda/bin")


def cubinrun(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=timeout)


def json_of(proc, code):
    assert proc.returncode == code, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def needs(tool):
    if not (shutil.which(tool) or (TOOLKIT / tool).is_file()):
        pytest.skip(f"{tool} is not installed")


# ---------------------------------------------------------------- guard bands

def test_a_write_past_the_end_is_caught_by_the_guard_band():
    report = json_of(cubinrun("launch", "--json", "--no-bench", BUGS / "oob_write.yaml"), 1)
    assert report["check"]["outputs"]["out"]["passed"] is True     # out itself is right
    [violation] = report["guards"]["violations"]
    assert violation["buffer"] == "out" and violation["side"] == "after"
    assert violation["first_offset"] == 4 * 4096 and violation["first_element"] == 4096


def test_without_guards_the_same_write_goes_unseen():
    report = json_of(cubinrun("launch", "--json", "--no-bench", "--no-guard",
                              BUGS / "oob_write.yaml"), 0)
    assert "guards" not in report


def test_guard_bands_in_worker_processes_of_a_multi_run_launch():
    document = json_of(cubinrun("launch", "--json", "--no-bench", BUGS / "oob_write.yaml",
                                CONFIGS / "vector_add.yaml"), 1)
    bad, good = document["results"]
    assert bad["exit_code"] == 1 and bad["guards"]["violations"][0]["buffer"] == "out"
    assert good["exit_code"] == 0 and good["guards"]["passed"] is True


# ---------------------------------------------------------------- --repeat

@pytest.mark.parametrize("config, buffer", [("racy_histogram.yaml", "bins"),
                                            ("atomic_sum.yaml", "total")])
def test_results_that_change_between_runs_are_caught_by_repeat(config, buffer):
    report = json_of(cubinrun("launch", "--json", "--no-bench", "--repeat", "8",
                              BUGS / config), 1)
    [d] = report["repeat"]["disagreements"]
    assert d["buffer"] == buffer and 1 <= d["runs_differing"] <= 7
    assert d["run1_value"] != d["value"]


@pytest.mark.parametrize("config", GOOD)
def test_good_samples_give_the_same_bits_every_run(config):
    report = json_of(cubinrun("launch", "--json", "--no-bench", "--repeat", "3",
                              CONFIGS / config), 0)
    assert report["repeat"]["passed"] is True and report["guards"]["passed"] is True


# ---------------------------------------------------------------- compute-sanitizer

@pytest.mark.parametrize("tool, config, kind, source", [
    ("memcheck", "oob_read.yaml", "Invalid __global__ read", "oob_read.cu:13"),
    ("racecheck", "shared_race.yaml", "Race condition", "shared_race.cu:14"),
    ("initcheck", "uninit_read.yaml", "Uninitialized __global__ memory read", "uninit_read.cu:20"),
    ("synccheck", "sync_divergent.yaml", "Barrier error: Divergent thread(s) in warp",
     "sync_divergent.cu:11"),
])
def test_each_bad_kernel_is_caught_by_its_tool(tool, config, kind, source):
    needs("compute-sanitizer")
    report = json_of(cubinrun("launch", BUGS / config, "--sanitize", tool, "--json"), 1)
    found = report["sanitizer"]
    assert found["tool"] == tool and found["passed"] is False and found["errors"] >= 1
    first = next(f for f in found["findings"] if f["kind"] != "CUDA API error")
    assert (first["kind"], first["source"]) == (kind, source)
    text = cubinrun("launch", BUGS / config, "--sanitize", tool)
    assert text.returncode == 1 and f"{tool}: FAIL" in text.stdout and kind in text.stdout


def test_sanitize_runs_each_spec_of_a_multi_run_launch_in_turn():
    needs("compute-sanitizer")
    # --sanitize before the specs: the first is a spec, not a tool
    document = json_of(cubinrun("launch", "--json", "--sanitize", BUGS / "oob_read.yaml",
                                CONFIGS / "vector_add.yaml", "--set", "N=4096"), 1)
    bad, good = document["results"]
    assert bad["sanitizer"]["tool"] == "memcheck" and bad["sanitizer"]["passed"] is False
    assert bad["exit_code"] == 1 and bad["status"] == "check failed"
    assert good["sanitizer"]["passed"] is True and good["exit_code"] == 0


@pytest.mark.parametrize("config", GOOD)
def test_good_samples_are_clean_under_memcheck(config):
    needs("compute-sanitizer")
    report = json_of(cubinrun("launch", CONFIGS / config, "--sanitize", "--json"), 0)
    assert report["sanitizer"]["passed"] is True and report["sanitizer"]["findings"] == []
    assert report["check"]["passed"] in (True, None)


@pytest.mark.parametrize("tool", ["racecheck", "initcheck", "synccheck"])
@pytest.mark.parametrize("config", ["vector_add.yaml", "scalars.yaml", "cluster_launch.yaml",
                                    "triton_tma_copy.yaml"])
def test_good_samples_are_clean_under_the_other_tools(tool, config):
    needs("compute-sanitizer")
    report = json_of(cubinrun("launch", CONFIGS / config, "--sanitize", tool, "--json"), 0)
    assert report["sanitizer"]["passed"] is True


# ---------------------------------------------------------------- Nsight Compute

def test_profile_one_launch_of_the_vector_add(tmp_path):
    needs("ncu")
    keep = tmp_path / "va.ncu-rep"
    proc = cubinrun("profile", "--json", "-o", keep, CONFIGS / "vector_add.yaml")
    profile = json_of(proc, 0)["profile"]
    assert keep.is_file() and profile["report"] == str(keep)
    assert 1 < profile["duration_us"] < 100 and profile["registers"] > 0
    assert 0 < profile["dram_throughput_pct"] <= 100
    assert 0 < profile["achieved_occupancy_pct"] <= 100 and profile["limiter"]
    text = cubinrun("profile", CONFIGS / "vector_add.yaml")
    assert text.returncode == 0 and "duration" in text.stdout and "limiter" in text.stdout


# ---------------------------------------------------------------- reproducers

@pytest.mark.parametrize("config", ["vector_add.yaml", "scalars.yaml", "cluster_launch.yaml",
                                    "cluster_dims.yaml", "triton_tma_copy.yaml", "structs.yaml",
                                    "triton_softmax.yaml"])
def test_the_reproducer_passes(config, tmp_path):
    folder = tmp_path / "repro"
    proc = cubinrun("repro", CONFIGS / config, "-o", folder)
    assert proc.returncode == 0, proc.stderr
    done = subprocess.run(["sh", str(folder / "run.sh")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("PASS ")


def test_the_reproducer_of_a_wrong_result_fails(tmp_path):
    # the histogram loses increments: the repro shows the same failure, standalone
    folder = tmp_path / "repro"
    assert cubinrun("repro", BUGS / "racy_histogram.yaml", "-o", folder).returncode == 0
    done = subprocess.run(["sh", str(folder / "run.sh")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and "bins: FAIL" in done.stdout
