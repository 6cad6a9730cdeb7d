"""`cubinrun tune` from the tests: its JSON document in this process, the best
value a made-up landscape holds (support/tunelandscape.py), and tunes of one
spec run concurrently by separate processes."""
from __future__ import annotations

import json
import subprocess
import sys

from support import tunelandscape
from support.cli import run as run_cli
from support.repo import PACKAGE_PARENT


def tune_json(capsys, *args) -> tuple[int, dict, str]:
    code, out, err = run_cli(capsys, "tune", "--json", *args)
    return code, (json.loads(out) if out.strip() else {}), err


def best_value(kind: str) -> float:
    return min(tunelandscape.values(kind))


def run_concurrently(args: list[str], n: int) -> list[dict]:
    import os
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    processes = [subprocess.Popen([sys.executable, "-m", "cubinrun", "tune", "--json", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  text=True) for _ in range(n)]
    docs = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        docs.append(json.loads(out))
    return docs
