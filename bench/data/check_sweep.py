"""What checking a matmul sweep against `A @ B` costs: the 40-point sweep of
configs/sweeps/matmul_tiled.yaml (TILE x WPT x UNROLL variants of one fp32
matmul, each compiled by NVRTC) run three ways in one process each:

- unchecked: the same spec without its `check:`,
- checked: `C: {expect: A @ B}` at every point, the float64 reference computed
  once and kept for the sweep (refcache.py),
- checked, cache off (CUBINRUN_REFERENCE_CACHE=0): the reference made again at
  every point, as it would be without the cache.

    python3 bench/data/check_sweep.py OUTDIR [--rounds 2] [--fake] [--set M=1024 ...]
        [--spec configs/realkernels/kt_matmul.yaml] [--spec-budget]

`--spec` sweeps another spec the same way (its `check:` section is left out
for the unchecked way); `--spec-budget` times with the spec's own warmup and
rep instead of the short 5 / 20 ms.

On the GPU machine, as is. With --fake the CPU's fake driver stands in
(tests/fakecuda: no kernel runs, so checks fail, exit 1, but the host's work,
the reference and the comparisons, is all there). Prints a table last and
writes OUTDIR/check_sweep.json; the sweep is warmed once first (NVRTC cache).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "configs" / "sweeps" / "matmul_tiled.yaml"
FAST = ["--warmup", "5", "--rep", "20"]
FAKE_CLI = ("import sys; import fakecuda.worker as w; w.install(); "
            "import cubinrun.runs.executor as e; e.WORKER_SETUP = 'fakecuda.worker:install'; "
            "from cubinrun.cli import main; main(sys.argv[1:])")


def run(environment, spec: Path, extra: list[str], fake: bool) -> tuple[float, dict]:
    command = ([sys.executable, "-c", FAKE_CLI] if fake else [sys.executable, "-m", "cubinrun"])
    started = time.perf_counter()
    proc = subprocess.run([*command, "launch", "--json", str(spec), *extra],
                          capture_output=True, text=True, env=environment, timeout=3600)
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1) or not proc.stdout:
        raise RuntimeError(proc.stderr[-2000:])
    return wall, json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--fake", action="store_true", help="the CPU's fake driver")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--spec-budget", action="store_true", help="the spec's own warmup/rep")
    args = parser.parse_args()
    spec_path = args.spec.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cubinrun-check-sweep-"))
    environment = dict(os.environ)
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    if args.fake:
        sys.path.insert(0, str(REPO / "tests"))
        from fakecuda import build_fake_driver
        fake = build_fake_driver(work)
        environment.update(CUBINRUN_LIBCUDA=str(fake.path),
                           CUBINRUN_CACHE_DIR=str(work / "cache"))
        paths.insert(0, str(REPO / "tests"))
    environment["PYTHONPATH"] = os.pathsep.join(paths)
    unchecked = spec_path.with_name(".unchecked_" + spec_path.name)
    text = spec_path.read_text()
    unchecked.write_text(text[:text.index("\ncheck:") + 1] + text[text.index("\nbench:") + 1:])
    extra = [x for pair in args.set for x in ("--set", pair)] + ([] if args.spec_budget else FAST)
    ways = {"unchecked": (unchecked, {}), "checked": (spec_path, {}),
            "checked, cache off": (spec_path, {"CUBINRUN_REFERENCE_CACHE": "0"})}
    try:
        run(environment, unchecked, extra, args.fake)          # warm the NVRTC cache
        walls: dict[str, list[float]] = {way: [] for way in ways}
        passed: dict[str, list] = {}
        for _ in range(args.rounds):
            for way, (spec, env) in ways.items():
                wall, document = run({**environment, **env}, spec, extra, args.fake)
                walls[way].append(wall)
                results = document.get("results", [document])
                passed[way] = [r.get("check", {}).get("passed") for r in results]
    finally:
        unchecked.unlink()
    base = statistics.median(walls["unchecked"])
    rows = {way: {"wall_s": statistics.median(w), "rounds": w,
                  "vs_unchecked": statistics.median(w) / base,
                  "points": len(passed[way]),
                  "passed": sum(p is True for p in passed[way])} for way, w in walls.items()}
    (args.out / "check_sweep.json").write_text(json.dumps(
        {"spec": str(spec_path.relative_to(REPO)), "set": args.set, "fake": args.fake,
         "ways": rows}, indent=2))
    print(f"{'way':<20} {'wall s':>8} {'x unchecked':>12} {'points':>7} {'passed':>7}")
    for way, row in rows.items():
        print(f"{way:<20} {row['wall_s']:>8.2f} {row['vs_unchecked']:>12.2f} "
              f"{row['points']:>7} {row['passed']:>7}")


if __name__ == "__main__":
    main()
