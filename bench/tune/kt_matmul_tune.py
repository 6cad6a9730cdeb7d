"""Kernel Tuner 1.5's brute force over its own matmul example (matmul.py's
space and restriction, WIDTH 4096 as matmul.cu fixes it), timed end to end,
for bench/tune/tune_vs_kernel_tuner.sh. Prints one JSON line: wall seconds, the
number of configurations timed, and the best configuration and its time."""
from __future__ import annotations

import json
import sys
import time

import numpy as np


def main(source: str, backend: str) -> None:
    import kernel_tuner
    width = 4096
    a = np.random.randn(width, width).astype(np.float32)
    b = np.random.randn(width, width).astype(np.float32)
    c = np.zeros_like(a)
    params = {"block_size_x": [16 * 2 ** i for i in range(3)],
              "block_size_y": [2 ** i for i in range(6)],
              "tile_size_x": [2 ** i for i in range(4)],
              "tile_size_y": [2 ** i for i in range(4)]}
    started = time.perf_counter()
    results, _ = kernel_tuner.tune_kernel(
        "matmul_kernel", source, (width, width), [c, a, b], params,
        grid_div_x=["block_size_x", "tile_size_x"], grid_div_y=["block_size_y", "tile_size_y"],
        restrictions=["block_size_x==block_size_y*tile_size_y"], lang=backend, quiet=True)
    wall = time.perf_counter() - started
    timed = [r for r in results if isinstance(r.get("time"), (int, float))]
    best = min(timed, key=lambda r: r["time"])
    print(json.dumps({"tool": f"kernel_tuner {kernel_tuner.__version__} ({backend})",
                      "wall_s": round(wall, 2), "configurations": len(results),
                      "timed": len(timed),
                      "best": {k: best[k] for k in params}, "best_ms": best["time"]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "cupy")
