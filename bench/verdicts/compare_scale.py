"""`cubinrun compare` of two large `launch --jsonl` files (issue 46: a CI job
compares a million runs and wants it in 20 s). Writes BASE and NEW, a
million runs each by default, shaped as launch writes them (~105 bytes a
line: spec, kernel, a point, the device, a timing), NEW 5% slower at every
100th run, then times `cubinrun compare` on them in a fresh process.

    PYTHONPATH=. python3 bench/verdicts/compare_scale.py            # 10^6 lines, ~105 MB a file
    PYTHONPATH=. python3 bench/verdicts/compare_scale.py --runs 100000 --keep /tmp/cmp
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def line(n: int, median: float) -> str:
    return json.dumps({"spec": "s.yaml", "kernel": "k", "point": {"N": n},
                       "device": {"name": "H200"}, "timing": {"median_us": median}}) + "\n"


def write(path: Path, runs: int, slower: bool) -> None:
    with open(path, "w") as out:
        for n in range(runs):
            median = 100.0 + n % 7
            out.write(line(n, median * (1.05 if slower and n % 100 == 0 else 1.0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--keep", metavar="DIR", help="Write the files here and keep them.")
    parser.add_argument("--json", action="store_true", help="Time `compare --json` too.")
    args = parser.parse_args()
    folder = Path(args.keep or tempfile.mkdtemp(prefix="compare-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    base, new = folder / "base.jsonl", folder / "new.jsonl"
    if not (base.exists() and new.exists()):
        write(base, args.runs, False)
        write(new, args.runs, True)
    print(f"{args.runs} runs, {base.stat().st_size / 1e6:.0f} MB a file")
    for extra in ([], ["--json"]) if args.json else ([],):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "cubinrun", "compare", *extra, str(base),
                               str(new)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, env={**os.environ})
        wall = time.perf_counter() - started
        print(f"compare {' '.join(extra)}: {wall:.1f} s, exit {done.returncode} "
              f"{done.stderr.strip()[-200:]}")
    if not args.keep:
        base.unlink()
        new.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
