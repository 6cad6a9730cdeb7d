"""Run a command with every Python process it starts under cProfile, then
print each process's costliest functions (cumulative time, main thread):

    python3 bench/profiled.py OUTDIR [--top N] -- python3 -m cubinrun tune SPEC ...

Worker processes are spawned interpreters, so a `sitecustomize` put first on
PYTHONPATH starts the profiler in each; a process dumps its profile to
OUTDIR/<pid>.prof as it exits (multiprocessing children skip atexit, so a
multiprocessing finalizer dumps theirs). cProfile sees only the main thread
of each process and slows Python-heavy code: read the shares, not the
seconds.
"""
from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path

SITECUSTOMIZE = '''
import cProfile, os, time
_out = os.environ["CUBINRUN_PROFILE_DIR"]
_profile = cProfile.Profile()
_started = time.perf_counter()
_done = False

def _dump():
    global _done
    if _done:
        return
    _done = True
    _profile.disable()
    path = os.path.join(_out, f"{os.getpid()}.prof")
    _profile.dump_stats(path)
    with open(path + ".wall", "w") as f:
        f.write(f"{time.perf_counter() - _started:.3f}\\n")

import atexit
atexit.register(_dump)
try:
    import multiprocessing.util as _util
    _util.Finalize(None, _dump, exitpriority=1000)
except Exception:
    pass
_profile.enable()
'''


def main() -> int:
    if "--" not in sys.argv:
        sys.exit(__doc__)
    split = sys.argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--top", type=int, default=45)
    args = parser.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as site:
        Path(site, "sitecustomize.py").write_text(SITECUSTOMIZE)
        env = dict(os.environ, CUBINRUN_PROFILE_DIR=str(out),
                   PYTHONPATH=os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])))
        code = subprocess.call(command, env=env)
    for prof in sorted(out.glob("*.prof"), key=lambda p: p.stat().st_mtime):
        wall = Path(str(prof) + ".wall").read_text().strip()
        print(f"\n=== process {prof.stem}: {wall} s from interpreter start")
        stats = pstats.Stats(str(prof), stream=sys.stdout)
        stats.sort_stats("cumulative").print_stats(args.top)
    return code


if __name__ == "__main__":
    sys.exit(main())
