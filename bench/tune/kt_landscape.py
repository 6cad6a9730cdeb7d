"""Kernel Tuner cache files <-> cubinrun's replayable landscapes (CPU).

A Kernel Tuner cache (the JSON `tune_kernel(cache=...)` writes: every
configuration it ran with its time in ms, or the error it gave) becomes what
`cubinrun tune --replay` reads: a spec whose sweep axes are the tunable
parameters (one that takes a single value is a var) and whose constraints are
the kernel's restrictions, and the `launch --jsonl` results of an exhaustive
sweep over it (the median in us; a failed configuration as a failed run:
CompilationFailedConfig a build error, RuntimeFailedConfig a CUDA error).

    python bench/tune/kt_landscape.py to-landscape CACHE.json[.gz] OUT/NAME \
        [--constraint EXPR ...] [--source URL --licence MIT]
    python bench/tune/kt_landscape.py to-cache OUT/NAME.yaml OUT/NAME.jsonl[.gz] CACHE.json

The constraints must leave exactly the configurations of the cache (Kernel
Tuner stores only those its restrictions left): the conversion says how many
differ and fails if any do, so a replayed search searches the space Kernel
Tuner's did. `to-cache` writes the reverse, a cache Kernel Tuner's
simulation mode replays (bench/tune/tune_real.py does so in process). Results are
written gzipped (`.jsonl.gz`) with only the fields a replay reads.
"""
from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("cubinrun") is None:      # run from a checkout, not installed
    sys.path.insert(0, str(REPO))

FAILURES = {"CompilationFailedConfig": ("build error", 3),
            "RuntimeFailedConfig": ("CUDA error", 4),
            "InvalidConfig": ("invalid", 3)}
SPEC = """\
# A replayable landscape converted from a Kernel Tuner cache (bench/tune/kt_landscape.py);
# the kernel is never run. {about}
kernel:
  cubin: k.cubin
  name: {kernel}
signature:
  out: "*fp32"
args:
  out: {{shape: [1], init: zeros}}
grid: [1]
vars:
{vars}
sweep:
{sweep}
{constraints}"""


def read_json(path: str | Path):
    """A JSON document, gzipped or not; a cache cut off mid-run (Kernel Tuner
    leaves its closing brackets off until it ends) is closed first."""
    raw = Path(path).read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(text.rstrip().rstrip(",") + "}}")


def read_lines(path: str | Path) -> list[dict]:
    raw = Path(path).read_bytes()
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def to_landscape(cache_path: str, out: Path, constraints: list[str], about: str) -> dict:
    """Write OUT.yaml and OUT.jsonl.gz from a Kernel Tuner cache; a summary."""
    cache = read_json(cache_path)
    names = cache["tune_params_keys"]
    params = cache["tune_params"]
    axes = {n: params[n] for n in names if len(params[n]) > 1}
    fixed = {n: params[n][0] for n in names if len(params[n]) == 1}
    device = cache.get("device_name") or "unknown GPU"
    spec = out.with_suffix(".yaml")
    spec.write_text(SPEC.format(
        about=about, kernel=cache.get("kernel_name", "kernel"),
        vars="\n".join(f"  {k}: {json.dumps(v)}"
                       for k, v in {**fixed, **{k: v[0] for k, v in axes.items()}}.items()),
        sweep="\n".join(f"  {k}: {json.dumps(v)}" for k, v in axes.items()),
        constraints=("constraints:\n" + "".join(f"  - {json.dumps(c)}\n" for c in constraints))
        if constraints else ""))
    lines, seen = [], set()
    for entry in cache["cache"].values():
        point = {n: entry[n] for n in axes}
        time = entry.get("time")
        result = {"kernel": cache.get("kernel_name", "kernel"), "point": point,
                  "device": {"name": device}}
        if isinstance(time, (int, float)) and not isinstance(time, bool) and time < 1e19:
            result.update(exit_code=0, status="ok", timing={"median_us": round(time * 1000, 4)})
        else:
            status, code = FAILURES.get(str(time), ("CUDA error", 4))
            result.update(exit_code=code, status=status, error={"message": str(time)})
        lines.append(json.dumps(result, separators=(",", ":")))
        seen.add(json.dumps(point, sort_keys=True))
    results = out.with_name(out.name + ".jsonl.gz")
    results.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), 9, mtime=0))
    from cubinrun.tune.space import load_space
    valid = {json.dumps(p, sort_keys=True) for p in load_space(str(spec), {}).valid}
    summary = {"spec": str(spec), "results": str(results), "device": device,
               "configurations": len(lines), "valid": len(valid),
               "not_in_cache": len(valid - seen), "not_valid": len(seen - valid)}
    if valid != seen:
        raise SystemExit(f"{spec}: the constraints leave {len(valid)} points, the cache holds "
                         f"{len(seen)}: {len(valid - seen)} not in the cache, "
                         f"{len(seen - valid)} the constraints refuse")
    return summary


def to_cache(spec: str, results: str, out: str, fixed: dict | None = None) -> dict:
    """A Kernel Tuner cache of a landscape: every valid point of the spec's space,
    its time in ms or the failure's name (Kernel Tuner's simulation mode needs
    every point its restrictions leave to be in the cache). `fixed`: vars that
    are tunable parameters of a single value (the restrictions read them)."""
    from cubinrun.tune.space import load_space, key
    space = load_space(spec, {})
    by_key = {key(r["point"]): r for r in read_lines(results)}
    fixed = fixed or {}
    names = [a.name for a in space.axes] + list(fixed)
    entries = {}
    for point in space.valid:
        result = by_key.get(key(point))
        ok = result is not None and result.get("exit_code") == 0 and result.get("timing")
        if ok:
            time = result["timing"]["median_us"] / 1000
        elif result is not None and result.get("status") in ("build error", "invalid"):
            time = "CompilationFailedConfig"
        else:
            time = "RuntimeFailedConfig"
        entries[",".join(str({**point, **fixed}[n]) for n in names)] = \
            {**point, **fixed, "time": time}
    device = next((r["device"]["name"] for r in by_key.values() if r.get("device")), "GPU")
    document = {"device_name": device, "kernel_name": Path(spec).stem, "problem_size": [1],
                "tune_params_keys": names,
                "tune_params": {**{a.name: space.ordered(a) for a in space.axes},
                                **{k: [v] for k, v in fixed.items()}},
                "objective": "time", "cache": entries}
    Path(out).write_text(json.dumps(document))
    return {"cache": out, "configurations": len(entries)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    land = sub.add_parser("to-landscape")
    land.add_argument("cache")
    land.add_argument("out", help="OUT/NAME: writes NAME.yaml and NAME.jsonl.gz")
    land.add_argument("--constraint", action="append", default=[])
    land.add_argument("--about", default="", help="where the cache came from, its licence")
    back = sub.add_parser("to-cache")
    back.add_argument("spec")
    back.add_argument("results")
    back.add_argument("out")
    args = parser.parse_args()
    if args.command == "to-landscape":
        print(json.dumps(to_landscape(args.cache, Path(args.out), args.constraint, args.about)))
    else:
        print(json.dumps(to_cache(args.spec, args.results, args.out)))


if __name__ == "__main__":
    main()
