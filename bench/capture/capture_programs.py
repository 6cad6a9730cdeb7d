"""`cubinrun capture` on real programs, on a GPU: each program of
tests/capture_programs/ (a torch.compile graph with and without Inductor's
static launcher, an eager PyTorch program, an nvcc-built CUDA program) run
plainly and under capture, then `cubinrun launch DIR` on what was captured.

Reports per program: launches seen, captured, passing their checks, whether
the program's stdout was the same, and the wall-clock overhead of capture
(capture's wall time over the plain run's). Needs torch with CUDA and nvcc
for the CUDA program (skipped without them).

    python bench/capture/capture_programs.py [--keep DIR] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "capture_programs"


def programs(work: Path) -> list[tuple[str, list[str], dict]]:
    """(name, command, extra environment) of each program that can run here."""
    python = [sys.executable]
    found = [("torch.compile", python + [str(PROGRAMS / "compiled.py")], {}),
             ("torch.compile, no static launcher", python + [str(PROGRAMS / "compiled.py")],
              {"STATIC_LAUNCHER": "0"}),
             ("eager PyTorch", python + [str(PROGRAMS / "eager.py")], {})]
    nvcc = shutil.which("nvcc")
    if nvcc:
        app = work / "app"
        subprocess.run([nvcc, "-O2", "-arch=native", "-o", str(app), str(PROGRAMS / "app.cu")],
                       check=True)
        found.append(("nvcc CUDA program", [str(app)], {}))
    return found


def run(command: list[str], env: dict) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env},
                          timeout=900)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start


def measure(name: str, command: list[str], env: dict, folder: Path) -> dict:
    code, plain_out, plain_err, plain_s = run(command, env)
    cubinrun = [sys.executable, "-m", "cubinrun"]
    # --no-verify: the overhead measured is capture's own; the launch below checks
    captured = [*cubinrun, "capture", "-o", str(folder), "--force", "--no-verify", "--",
                *command]
    ccode, cap_out, cap_err, cap_s = run(captured, env)
    summary = json.loads((folder / "capture.json").read_text()) if (folder / "capture.json").is_file() else {}
    lcode, launch_out, launch_err, _ = run([*cubinrun, "launch", "--json", "--no-bench",
                                            str(folder)], {})
    results = []
    if launch_out.strip():
        document = json.loads(launch_out)
        results = document.get("results") or [{**document, "exit_code": lcode}]
    passing = [r for r in results if r.get("exit_code", 0) == 0]
    failing = [{"spec": r.get("spec"), "exit_code": r.get("exit_code"),
                "error": r.get("error")} for r in results if r.get("exit_code", 0) != 0]
    return {"program": name, "exit_code": code, "capture_exit_code": ccode,
            "same_stdout": cap_out == plain_out, "plain_s": round(plain_s, 2),
            "capture_s": round(cap_s, 2), "overhead": round(cap_s / plain_s, 2),
            "launches_seen": summary.get("launches_seen"), "captured": summary.get("captured"),
            "passing": len(passing), "launched": len(results), "failing": failing[:10],
            "skipped": summary.get("skipped", [])[:20],
            "capture_stderr_tail": cap_err[-1500:] if ccode else "",
            "launch_stderr_tail": launch_err[-1500:] if lcode not in (0, 1) else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the capture folders here")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="capture-bench-"))
    keep = options.keep or work
    keep.mkdir(parents=True, exist_ok=True)
    rows = []
    for index, (name, command, env) in enumerate(programs(work)):
        rows.append(measure(name, command, env, keep / f"capture{index}"))
        row = rows[-1]
        print(f"{name}: seen {row['launches_seen']}, captured {row['captured']}, passing "
              f"{row['passing']}/{row['launched']}, same stdout {row['same_stdout']}, "
              f"{row['plain_s']} s plain, {row['capture_s']} s captured "
              f"({row['overhead']}x)", file=sys.stderr)
    if options.json:
        print(json.dumps(rows, indent=2))
    if not options.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
