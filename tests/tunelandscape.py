"""Landscapes for replayed tunes: a spec with sweep axes and the `launch
--jsonl` results of an exhaustive sweep over them, made up (no GPU needed).

- `smooth`: a small 2-axis space (64 points) with one optimum.
- `reduction`: shaped like Kernel Tuner's reduction example over its own
  792 points (block_size_x 32..1024, use_shuffle, vector 1/2/4, num_blocks 22
  values): a memory-bound kernel whose time falls with enough bytes in flight
  and rises with the blocks' partial sums, plus a fixed jitter per
  configuration. Few configurations are within 1% of the best and many
  within 2%, as on the H200 (random search: a median of 124 evaluations to
  within 1%, 8 to within 2%).
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

SPEC_HEAD = """\
# A landscape for replayed tunes (tests/tunelandscape.py); the kernel is never run.
kernel:
  cubin: k.cubin
  name: {name}
signature:
  out: "*fp32"
  n: i32
vars:
{vars}
args:
  out: {{shape: [1024], init: zeros}}
  n: 1024
grid: [1]
sweep:
{sweep}
"""

REDUCTION_AXES = {
    "block_size_x": [32, 64, 128, 256, 512, 1024],
    "use_shuffle": [0, 1],
    "vector": [1, 2, 4],
    "num_blocks": [66 * k for k in range(1, 23)],
}
SMOOTH_AXES = {"BX": [8, 16, 32, 64, 128, 256, 512, 1024], "TILE": [1, 2, 3, 4, 5, 6, 7, 8]}


def _jitter(point: dict, scale: float) -> float:
    """A fixed pseudo-random factor in [1 - scale, 1 + scale] per configuration."""
    h = hashlib.sha256(json.dumps(point, sort_keys=True).encode()).digest()
    return 1 + scale * (int.from_bytes(h[:4], "little") / 2**32 * 2 - 1)


def reduction_time(point: dict) -> float:
    """Microseconds for 80M floats (320 MB) on a ~4 TB/s GPU."""
    threads = point["num_blocks"] * point["block_size_x"]
    efficiency = 1 - math.exp(-threads * point["vector"] / 90_000)   # bytes in flight
    stream = 320e6 / (4.0e12 * 0.93 * efficiency) * 1e6
    partial = point["num_blocks"] * 0.001                   # the second pass over partials
    tree = math.log2(point["block_size_x"]) * (0.35 if point["use_shuffle"] else 0.9)
    time = (stream + partial + tree) * _jitter(point, 0.003)
    if point["vector"] == 4 and point["use_shuffle"] and point["block_size_x"] == 256 \
            and 660 <= point["num_blocks"] <= 924:
        time *= 1 - 0.011                                   # the few that stand out
    return time


def smooth_time(point: dict) -> float:
    return (100 + (math.log2(point["BX"]) - 6) ** 2 * 8 + (point["TILE"] - 5) ** 2 * 5) \
        * _jitter(point, 0.002)


LANDSCAPES = {"reduction": (REDUCTION_AXES, reduction_time, "sum_floats"),
              "smooth": (SMOOTH_AXES, smooth_time, "mm")}


def write(folder: Path, kind: str = "smooth", device: str = "Fake H200",
          fail: dict | None = None) -> tuple[Path, Path]:
    """(spec, results.jsonl) of landscape `kind` in `folder`. `fail` maps a point
    key (json of the point, sorted) to an error result for it."""
    axes, time_of, name = LANDSCAPES[kind]
    spec = folder / f"{kind}.yaml"
    spec.write_text(SPEC_HEAD.format(
        name=name, vars="\n".join(f"  {k}: {v[0]}" for k, v in axes.items()),
        sweep="\n".join(f"  {k}: {json.dumps(v)}" for k, v in axes.items())))
    lines = []
    for point in points(axes):
        result = {"spec": str(spec), "point": point, "kernel": name, "exit_code": 0,
                  "status": "ok", "device": {"name": device},
                  "timing": {"median_us": round(time_of(point), 4)},
                  "check": {"passed": True}, "wall_s": 0.01}
        failure = (fail or {}).get(json.dumps(point, sort_keys=True))
        if failure:
            result.update(failure)
            result.pop("timing", None)
        lines.append(json.dumps(result))
    results = folder / f"{kind}.jsonl"
    results.write_text("\n".join(lines) + "\n")
    return spec, results


def points(axes: dict) -> list[dict]:
    import itertools
    return [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]


def values(kind: str) -> list[float]:
    axes, time_of, _ = LANDSCAPES[kind]
    return [time_of(p) for p in points(axes)]
