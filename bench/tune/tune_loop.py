"""The tune loop's own time, on the CPU: a replayed brute-force tune over a
40-point landscape (tests/support/tunelandscape.py) whose evaluations each take 50 ms,
as a GPU run of a few-ms kernel would. What `seconds.search` holds beyond
40 x 50 ms is the loop keeping the GPU waiting: Optuna's asks and tells through
SQLite, the contest checks, the refreshes.

    PYTHONPATH=.:tests python3 bench/tune/tune_loop.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

EVALUATION_S = 0.05
POINTS = 40


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from support import tunelandscape
    from cubinrun.cli import main as cli
    from cubinrun.tune import evaluate

    replay = evaluate.ReplayEvaluator.evaluate

    def like_a_gpu(self, points, timing_only=False):
        time.sleep(EVALUATION_S * len(points))
        return replay(self, points, timing_only)
    evaluate.ReplayEvaluator.evaluate = like_a_gpu

    folder = Path(tempfile.mkdtemp())
    spec, results = tunelandscape.write(folder, "smooth")
    (folder / "k.cubin").write_bytes(b"")
    beyond = []
    for round_ in range(args.rounds):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            with contextlib.suppress(SystemExit):
                cli(["tune", str(spec), "--replay", str(results), "--strategy", "brute",
                     "--storage", f"sqlite:///{folder}/study{round_}.sqlite", "--json",
                     "--max-evals", str(POINTS)])
        seconds = json.loads(out.getvalue())["seconds"]
        beyond.append(seconds["search"] - POINTS * EVALUATION_S)
    print(f"search beyond {POINTS} x {EVALUATION_S * 1000:.0f} ms of evaluations, "
          f"{args.rounds} rounds: " + ", ".join(f"{b:.3f} s" for b in beyond))


if __name__ == "__main__":
    main()
