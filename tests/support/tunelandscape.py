"""Landscapes for replayed tunes: a spec with sweep axes and the `launch
--jsonl` results of an exhaustive sweep over them, made up (no GPU needed).

- `smooth`: a small 2-axis space (64 points) with one optimum.
- `waves`: the reduction's space, rugged as a measured one: partial waves of
  blocks make neighbouring num_blocks differ (4 points within 1%).
- `matmul`: a tiled matmul's 4 axes (384 points), a fifth of them failing
  (too many threads, too much shared memory), with a cliff where registers
  spill.
- `reduction`: shaped like Kernel Tuner's reduction example over its own
  792 points (block_size_x 32..1024, use_shuffle, vector 1/2/4, num_blocks 22
  values): a memory-bound kernel whose time falls with enough bytes in flight
  and rises with the blocks' partial sums, plus a fixed jitter per
  configuration. Few configurations are within 1% of the best and many
  within 2%, as on the H200 (random search: a median of 124 evaluations to
  within 1%, 8 to within 2%).
- `stride`: the reduction's space over a smaller input (2^22 floats): each
  thread's grid-stride loop runs only a few times, so a partial last trip
  (the step does not divide the input) and a partial last wave of blocks
  both cost, and the best points sit where the two line up, elsewhere in
  the space than the others' best.
- `convolution`: a 2D convolution's 5 axes (shaped like Kernel Tuner's
  convolution example: a 17x17 filter over a 4096^2 image, each block
  staging its tile and halo in shared memory): the halo's share falls with
  larger tiles, the shared memory a block takes bounds how many an SM holds,
  and without padding the shared tile's rows conflict in the banks for some
  widths; a tenth of the points fail (too many threads or registers, too
  much shared memory).
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

SPEC_HEAD = """\
# A landscape for replayed tunes (tests/support/tunelandscape.py); the kernel is never run.
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


SMS = 132                   # the H200's multiprocessors


def waves_time(point: dict) -> float:
    """The reduction again, with what makes a measured one rugged: only the
    blocks resident at once keep bytes in flight, and a last, partial wave of
    blocks leaves the GPU part idle, so neighbouring num_blocks can differ."""
    block, blocks = point["block_size_x"], point["num_blocks"]
    slots = SMS * min(32, 2048 // block)                    # blocks resident at once
    resident = min(blocks, slots)
    efficiency = 1 - math.exp(-resident * block * point["vector"] / 120_000)
    tail = math.ceil(blocks / slots) * slots / blocks       # 1: whole waves only
    stream = 320e6 / (4.0e12 * 0.93 * efficiency) * 1e6 * tail ** 0.25
    tree = math.log2(block) * (0.35 if point["use_shuffle"] else 0.9)
    return (stream + blocks * 0.002 + tree) * _jitter(point, 0.004)


STRIDE_N = 2 ** 22


def stride_time(point: dict) -> float:
    """The reduction over 2^22 floats (16 MB): the waves model, where each
    thread's loop trips ceil(n / step) times over a step of num_blocks x
    block_size_x vectors, so the last trip runs partly empty, and a thread's
    first load, which nothing hides, counts for a few trips more."""
    block, blocks, vector = point["block_size_x"], point["num_blocks"], point["vector"]
    slots = SMS * min(32, 2048 // block)
    resident = min(blocks, slots)
    efficiency = 1 - math.exp(-resident * block * vector / 120_000)
    tail = math.ceil(blocks / slots) * slots / blocks
    step = blocks * block
    trips = STRIDE_N / vector / step
    stream = STRIDE_N * 4 / (4.0e12 * 0.93 * efficiency) * 1e6 * tail ** 0.25 \
        * (math.ceil(trips) + 1.5) / (trips + 1.5)            # the partial last trip
    tree = math.log2(block) * (0.35 if point["use_shuffle"] else 0.9)
    return (stream + 1.5 + blocks * 0.002 + tree) * _jitter(point, 0.004)


CONVOLUTION_AXES = {"block_size_x": [16, 32, 48, 64, 96, 128], "block_size_y": [1, 2, 4, 8, 16],
                    "tile_size_x": [1, 2, 4], "tile_size_y": [1, 2, 4, 8], "use_padding": [0, 1]}
HALO = 16                   # a 17x17 filter


def _convolution_block(point: dict) -> tuple[int, int, int]:
    """(threads, registers a thread, shared bytes) of a convolution block."""
    bx, by = point["block_size_x"], point["block_size_y"]
    tx, ty = point["tile_size_x"], point["tile_size_y"]
    width = bx * tx + HALO + (1 if point["use_padding"] else 0)
    registers = 30 + tx * ty + tx * (ty + HALO) // 2
    return bx * by, registers, width * (by * ty + HALO) * 4


def convolution_fails(point: dict) -> str | None:
    threads, registers, shared = _convolution_block(point)
    if threads < 32 or threads > 1024:
        return "invalid"
    if registers > 255 or threads * registers > 65536:
        return "invalid"
    return "build error" if shared > 48 * 1024 else None


def convolution_time(point: dict) -> float:
    """Microseconds for a 17x17 filter over a 4096^2 fp32 image: bound by the
    shared-memory loads (a thread keeps a column of its tile's input in
    registers, so a taller tile loads less a result), hidden by the warps an
    SM holds; the halo adds loads from memory; without padding, a warp whose
    threads span rows whose width is a multiple of 32 words reads one bank."""
    bx, by = point["block_size_x"], point["block_size_y"]
    tx, ty = point["tile_size_x"], point["tile_size_y"]
    threads, registers, shared = _convolution_block(point)
    per_sm = max(1, min(32, 2048 // threads, 65536 // (threads * registers),
                        228 * 1024 // (shared + 1024)))      # 1: one that fails
    warps = per_sm * threads / 32
    hidden = 1 - math.exp(-warps * min(tx * ty, 4) / 24)
    loads = 17 * (ty + HALO) / ty                           # shared loads a result
    width = bx * tx + HALO + (1 if point["use_padding"] else 0)
    rows_in_warp = max(1, 32 // bx)
    conflict = math.gcd(width, 32) if rows_in_warp > 1 else 1
    conflict = min(conflict, rows_in_warp)
    shared_s = 4096 ** 2 * loads * conflict / (SMS * 32 * 1.98e9 * hidden)
    halo = (bx * tx + HALO) * (by * ty + HALO) / (bx * tx * by * ty)
    memory_s = 4096 ** 2 * 4 * (1 + halo) / 4.0e12
    blocks = math.ceil(4096 / (bx * tx)) * math.ceil(4096 / (by * ty))
    waves = blocks / (SMS * per_sm)
    tail = math.ceil(waves) / waves
    return (max(shared_s, memory_s) * 1e6 * tail ** 0.5 + 3) * _jitter(point, 0.004)


MATMUL_AXES = {"block_size_x": [16, 32, 64, 128], "block_size_y": [1, 2, 4, 8, 16, 32],
               "tile_size_x": [1, 2, 4, 8], "tile_size_y": [1, 2, 4, 8]}


def matmul_fails(point: dict) -> str | None:
    """Why a configuration of the matmul landscape does not run, if it does not."""
    threads = point["block_size_x"] * point["block_size_y"]
    if threads < 32 or threads > 1024:
        return "invalid"
    shared = (point["block_size_x"] * point["tile_size_x"] +
              point["block_size_y"] * point["tile_size_y"]) * 16 * 4
    return "build error" if shared > 48 * 1024 else None


def matmul_time(point: dict) -> float:
    """A 4096^3 tiled fp32 matmul: each thread's tile reuses its loads (more
    work a thread, fewer loads a flop) until its registers spill, and the
    registers a block takes bound how many blocks an SM holds."""
    tx, ty = point["tile_size_x"], point["tile_size_y"]
    threads = point["block_size_x"] * point["block_size_y"]
    registers = 24 + 2 * tx * ty + tx + ty
    spill = 3.0 if registers > 128 else 1.0
    resident = min(2048, 65536 // max(registers, 32) // threads * threads) / 2048
    reuse = (tx * ty) / (tx + ty)                           # flops per load
    coalesced = min(1.0, point["block_size_x"] * tx / 64) ** 0.3
    rate = 60.0 * reuse / (reuse + 1.5) * (0.4 + 0.6 * resident) * coalesced
    return 2 * 4096 ** 3 / (rate * 1e12) * 1e6 * spill * _jitter(point, 0.01)


def smooth_time(point: dict) -> float:
    return (100 + (math.log2(point["BX"]) - 6) ** 2 * 8 + (point["TILE"] - 5) ** 2 * 5) \
        * _jitter(point, 0.002)


LANDSCAPES = {"reduction": (REDUCTION_AXES, reduction_time, "sum_floats"),
              "waves": (REDUCTION_AXES, waves_time, "sum_floats"),
              "matmul": (MATMUL_AXES, matmul_time, "matmul"),
              "stride": (REDUCTION_AXES, stride_time, "sum_floats"),
              "convolution": (CONVOLUTION_AXES, convolution_time, "convolution"),
              "smooth": (SMOOTH_AXES, smooth_time, "mm")}
FAILS = {"matmul": matmul_fails, "convolution": convolution_fails}         # landscapes where some configurations fail


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
        failure = (fail or {}).get(json.dumps(point, sort_keys=True)) or _failure(kind, point)
        if failure:
            result.update(failure)
            result.pop("timing", None)
        lines.append(json.dumps(result))
    results = folder / f"{kind}.jsonl"
    results.write_text("\n".join(lines) + "\n")
    return spec, results


def _failure(kind: str, point: dict) -> dict | None:
    status = FAILS[kind](point) if kind in FAILS else None
    if status is None:
        return None
    return {"exit_code": 3, "status": status, "error": {"message": f"{status} (made up)"}}


def points(axes: dict) -> list[dict]:
    import itertools
    return [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]


def values(kind: str) -> list[float]:
    axes, time_of, _ = LANDSCAPES[kind]
    return [time_of(p) for p in points(axes) if _failure(kind, p) is None]
