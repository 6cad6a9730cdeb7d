"""bench/tune/kt_landscape.py: a Kernel Tuner cache becomes a landscape that `tune
--replay` reads (its restrictions as the spec's constraints, checked to leave
exactly the cache's configurations), and back into a cache with the same
times; and the landscapes kept in bench/tune/landscapes/ are whole."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from support.cli import run as run_cli
from support.repo import REPO

sys.path.insert(0, str(REPO / "bench" / "tune"))
import kt_landscape  # noqa: E402

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")


def kt_cache(path: Path) -> dict:
    """A small cache as Kernel Tuner writes it: 3 x 3 block sizes under the
    restriction bx * by <= 64, a fixed filter size, one that failed to compile."""
    entries = {}
    for bx in (8, 16, 32):
        for by in (1, 2, 4):
            if bx * by > 64:
                continue
            time = "CompilationFailedConfig" if (bx, by) == (32, 2) else 1.0 + bx / 100 + by / 7
            entries[f"{bx},{by},5"] = {"block_size_x": bx, "block_size_y": by, "f": 5,
                                       "time": time, "times": [time] * 3}
    document = {"device_name": "NVIDIA Test GPU", "kernel_name": "k", "problem_size": [64],
                "tune_params_keys": ["block_size_x", "block_size_y", "f"],
                "tune_params": {"block_size_x": [8, 16, 32], "block_size_y": [1, 2, 4],
                                "f": [5]},
                "objective": "time", "cache": entries}
    # Kernel Tuner leaves the closing brackets off a cache until its tune ends
    path.write_text(json.dumps(document)[:-2])
    return document


def test_a_cache_becomes_a_replayable_landscape_and_back(tmp_path, capsys):
    document = kt_cache(tmp_path / "k.json")
    summary = kt_landscape.to_landscape(str(tmp_path / "k.json"), tmp_path / "land",
                                        ["block_size_x * block_size_y <= 64 + f - f"], "test")
    assert summary["configurations"] == summary["valid"] == 8
    lines = kt_landscape.read_lines(tmp_path / "land.jsonl.gz")
    failed = [line for line in lines if line["exit_code"]]
    assert [(f["point"], f["status"]) for f in failed] == \
        [({"block_size_x": 32, "block_size_y": 2}, "build error")]
    results = tmp_path / "land.jsonl"
    results.write_bytes(gzip.decompress((tmp_path / "land.jsonl.gz").read_bytes()))
    code, out, _ = run_cli(capsys, "tune", str(tmp_path / "land.yaml"), "--replay",
                           str(results), "--strategy", "brute", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["measured"] == 8 and doc["device"]["name"] == "NVIDIA Test GPU"
    assert doc["best"]["point"] == {"block_size_x": 8, "block_size_y": 1}
    assert doc["best"]["value"] == pytest.approx((1.0 + 0.08 + 1 / 7) * 1000)
    back = tmp_path / "back.json"
    kt_landscape.to_cache(str(tmp_path / "land.yaml"), str(results), str(back), {"f": 5})
    again = json.loads(back.read_text())
    assert again["tune_params"] == document["tune_params"]
    assert {k: v["time"] for k, v in again["cache"].items()} == pytest.approx(
        {k: v["time"] for k, v in document["cache"].items() if isinstance(v["time"], float)}
        | {"32,2,5": "CompilationFailedConfig"})


def test_constraints_that_leave_other_points_than_the_cache_are_refused(tmp_path):
    kt_cache(tmp_path / "k.json")
    with pytest.raises(SystemExit, match="the constraints leave 9 points, the cache holds 8"):
        kt_landscape.to_landscape(str(tmp_path / "k.json"), tmp_path / "land", [], "test")


def test_the_kept_landscapes_are_whole():
    """Every landscape bench/tune/tune_real.py reads: its spec's space is exactly its
    results' points (the smallest two, for time), named in the index."""
    folder = REPO / "bench" / "tune" / "landscapes"
    index = json.loads((folder / "index.json").read_text())
    assert {p.name.split(".")[0] for p in folder.glob("*.yaml")} == set(index)
    from cubinrun.tune.space import key, load_space
    for name in ("pnpoly_3090", "conv_a100"):
        lines = kt_landscape.read_lines(folder / f"{name}.jsonl.gz")
        space = load_space(str(folder / f"{name}.yaml"), {})
        assert {key(p) for p in space.valid} == {key(line["point"]) for line in lines}
        assert index[name]["role"] in ("choose", "confirm")
