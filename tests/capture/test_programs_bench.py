"""bench/capture/capture_programs.py's count of distinct kernels from a capture.json:
a kernel captured anywhere is captured (though left out elsewhere, e.g. at its
graph's capture), a repeat is no kernel left out, and a kernel passes only when
every spec of it replayed and passed."""
from __future__ import annotations

import importlib.util

from support.repo import REPO


def _bench():
    # By its path, not its name: `capture_programs` is also the folder
    # tests/capture_programs/, and tests/ is on sys.path.
    path = REPO / "bench" / "capture" / "capture_programs.py"
    spec = importlib.util.spec_from_file_location("bench_capture_programs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kernels_seen_captured_passing_and_left_out_by_reason():
    summary = {
        "specs": [{"spec": "0000-gemm.yaml", "kernel": "gemm", "extra": True, "graph": None},
                  {"spec": "0001-gemm.yaml", "kernel": "gemm", "extra": True, "graph": None},
                  {"spec": "0002-relu.yaml", "kernel": "relu", "graph": "exec 0x1, node 0 of 2",
                   "globals": ["table"]}],
        "skipped": [
            {"kernel": "relu", "reason": "launched into a CUDA graph being captured (captured "
                                         "when the graph is launched)", "count": 1},
            {"kernel": "gemm", "reason": "a launch of the same kernel, grid and sizes was "
                                         "already seen", "count": 7},
            {"kernel": "philox", "reason": "no module the process loaded defines this kernel",
             "count": 2},
            {"kernel": "sum_rows", "reason": "its memory holds 2 pointer(s) into other "
                                             "allocations", "count": 1}]}
    passed = {"0000-gemm.yaml": True, "0001-gemm.yaml": False, "0002-relu.yaml": True}
    counts = _bench().kernel_counts(summary, passed)
    assert (counts["kernels_seen"], counts["kernels_captured"], counts["kernels_passing"]) == (4, 2, 1)
    assert counts["captured_share"] == 0.5
    assert counts["left_out"] == {
        "no module the process loaded defines this kernel": ["philox"],
        "its memory holds 2 pointer(s) into other allocations": ["sum_rows"]}
    assert (counts["specs_from_graphs"], counts["specs_through_extra"],
            counts["specs_with_globals"]) == (1, 2, 1)
