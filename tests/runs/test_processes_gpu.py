"""`launch --processes N` on a real GPU (`gpu` marker: skipped cleanly
without one). The CPU tests (test_processes.py, tests/results/test_process_noise.py) cover
the pooling and the verdicts on the fake driver and synthetic results."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.repo import REPO

pytestmark = pytest.mark.gpu

VECTOR_ADD = REPO / "configs" / "vector_add.yaml"


def cubinrun(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)


def test_each_process_measures_the_kernel_and_the_pooled_median_sits_among_them(tmp_path):
    path = tmp_path / "a.jsonl"
    proc = cubinrun("launch", VECTOR_ADD, "--set", "N=16777216", "--processes", "3",
                    "--rep", "30", "--jsonl", path)
    assert proc.returncode == 0, proc.stderr
    timing = json.loads(path.read_text())["timing"]
    medians = timing["process_medians_us"]
    assert timing["processes"] == 3 and len(medians) == 3
    assert min(medians) <= timing["median_us"] <= max(medians)
    assert timing["process_spread"] < 0.05           # a 60 us kernel: processes agree closely
    assert len(set(timing["process_offsets_us"])) == 3   # each process calibrated its own


def test_two_gathered_results_of_identical_code_are_not_slower(tmp_path):
    files = []
    for name in ("base", "new"):
        files.append(tmp_path / f"{name}.jsonl")
        proc = cubinrun("launch", VECTOR_ADD, REPO / "configs/empty0.yaml", "--processes", "4",
                        "--rep", "20", "--jsonl", files[-1])
        assert proc.returncode == 0, proc.stderr
    proc = cubinrun("compare", *files, "--json")
    assert proc.returncode == 0, proc.stdout[-2000:]
    comparisons = json.loads(proc.stdout)["comparisons"]
    assert [c["method"] for c in comparisons] == ["processes", "processes"]
    assert all(c["verdict"] in ("SAME", "AMBIGUOUS") for c in comparisons)
