"""`cubinrun capture` on real programs, on a GPU: each program of
tests/capture_programs/ run plainly and under capture, then `cubinrun launch
DIR` on what was captured. The programs are what users run: a torch.compile
graph (with and without Inductor's static launcher), eager PyTorch, library
calls (cuBLASLt GEMMs in fp16/bf16/fp32, a cuDNN convolution, scaled-dot-
product attention, a graph replayed by hand), torch.compile(mode=
"reduce-overhead"), Triton kernels taking a tuple and tensor descriptors, a
CuPy program, and nvcc-built CUDA programs (plain
launches; cudaLaunchKernelEx with cluster dimensions and a captured graph; a
pointer array and a __constant__ table).

Reports per program: distinct kernels (by name) seen, captured and passing
their replay, those left out by reason, whether the program's stdout was the
same, and the wall time plain and captured (capture's own, `--no-verify`).
Programs whose requirements are missing (torch, triton, cupy, nvcc) are listed
as skipped with the reason.

    python bench/capture/capture_programs.py [--keep DIR] [--json] [--only NAME]
"""
from __future__ import annotations

import argparse
import importlib.util
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
# reasons that say a kernel was seen again, not that it could not be captured
REPEATS = ("a launch of the same kernel, grid and sizes was already seen", "--skip", "--limit")


def programs(work: Path) -> list[tuple[str, list[str] | None, dict, str]]:
    """(name, command or None, extra environment, why it is skipped) of each program."""
    python = [sys.executable]
    have = {m: importlib.util.find_spec(m) is not None for m in ("torch", "triton", "cupy")}
    found = []

    def add(name, script, env=None, needs=("torch",)):
        missing = [m for m in needs if not have[m]]
        found.append((name, None if missing else python + [str(PROGRAMS / script)], env or {},
                      f"no {', '.join(missing)}" if missing else ""))

    add("torch.compile", "compiled.py", needs=("torch", "triton"))
    add("torch.compile, no static launcher", "compiled.py", {"STATIC_LAUNCHER": "0"},
        needs=("torch", "triton"))
    add("eager PyTorch", "eager.py")
    add("library calls (GEMMs, conv, SDPA, a graph by hand)", "libraries.py")
    add("torch.compile reduce-overhead (CUDA graphs)", "reduce_overhead.py",
        needs=("torch", "triton"))
    add("Triton tuples and tensor descriptors", "triton_args.py", needs=("torch", "triton"))
    add("CuPy", "cupy_program.py", needs=("cupy",))
    nvcc = shutil.which("nvcc")
    for name, source in (("nvcc CUDA program", "app.cu"),
                         ("cudaLaunchKernelEx, clusters, a graph", "launch_ex.cu"),
                         ("pointer array and __constant__ table", "tables.cu")):
        if nvcc is None:
            found.append((name, None, {}, "no nvcc"))
            continue
        binary = work / Path(source).stem
        built = subprocess.run([nvcc, "-O2", "-arch=native", "-o", str(binary),
                                str(PROGRAMS / source)], capture_output=True, text=True)
        found.append((name, [str(binary)] if built.returncode == 0 else None, {},
                      "" if built.returncode == 0 else f"nvcc failed: {built.stderr[-300:]}"))
    return found


def run(command: list[str], env: dict) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env},
                          timeout=900)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - start


def kernel_counts(summary: dict, passed: dict[str, bool]) -> dict:
    """Distinct kernels by name: seen, captured, passing (every spec of it passed its
    replay), and those never captured grouped by the reasons they were left out."""
    specs = summary.get("specs", [])
    captured = {s["kernel"] for s in specs}
    seen = captured | {s["kernel"] for s in summary.get("skipped", [])
                       if s["reason"] not in REPEATS}
    passing = {k for k in captured
               if all(passed.get(s["spec"], False) for s in specs if s["kernel"] == k)}
    left_out: dict[str, list[str]] = {}
    for s in summary.get("skipped", []):
        if s["kernel"] not in captured and s["reason"] not in REPEATS:
            left_out.setdefault(s["reason"], [])
            if s["kernel"] not in left_out[s["reason"]]:
                left_out[s["reason"]].append(s["kernel"])
    return {"kernels_seen": len(seen), "kernels_captured": len(captured),
            "kernels_passing": len(passing),
            "captured_share": round(len(captured) / len(seen), 3) if seen else None,
            "left_out": {reason: sorted(names)[:20] for reason, names in left_out.items()},
            "specs_from_graphs": sum(1 for s in specs if s.get("graph")),
            "specs_through_extra": sum(1 for s in specs if s.get("extra")),
            "specs_with_globals": sum(1 for s in specs if s.get("globals"))}


def replay(folder: Path) -> tuple[dict[str, bool], list[dict], str]:
    """Each spec's outcome under `cubinrun launch --no-bench` (by file name)."""
    code, out, err, _ = run([sys.executable, "-m", "cubinrun", "launch", "--json",
                             "--no-bench", str(folder)], {})
    results = []
    if out.strip():
        document = json.loads(out)
        results = document.get("results") or [{**document, "exit_code": code}]
    passed = {Path(str(r.get("spec"))).name: r.get("exit_code", 0) == 0 for r in results}
    failing = [{"spec": r.get("spec"), "exit_code": r.get("exit_code"), "error": r.get("error")}
               for r in results if r.get("exit_code", 0) != 0]
    return passed, failing, err[-1500:] if code not in (0, 1) else ""


def measure(name: str, command: list[str], env: dict, folder: Path) -> dict:
    code, plain_out, _, plain_s = run(command, env)
    # --no-verify: the time measured is capture's own; the replay below checks
    captured = [sys.executable, "-m", "cubinrun", "capture", "-o", str(folder), "--force",
                "--no-verify", "--", *command]
    ccode, cap_out, cap_err, cap_s = run(captured, env)
    summary_file = folder / "capture.json"
    summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    passed, failing, launch_err = replay(folder) if summary else ({}, [], "")
    return {"program": name, "exit_code": code, "capture_exit_code": ccode,
            "same_stdout": cap_out == plain_out, "plain_s": round(plain_s, 2),
            "capture_s": round(cap_s, 2), "overhead": round(cap_s / plain_s, 2),
            "launches_seen": summary.get("launches_seen"), "specs": summary.get("captured"),
            "specs_passing": sum(passed.values()), **kernel_counts(summary, passed),
            "failing": failing[:10],
            "capture_stderr_tail": cap_err[-1500:] if ccode else "",
            "launch_stderr_tail": launch_err}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the capture folders here")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--only", help="run only the programs whose name contains this")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="capture-bench-"))
    keep = options.keep or work
    keep.mkdir(parents=True, exist_ok=True)
    rows = []
    for index, (name, command, env, why) in enumerate(programs(work)):
        if options.only and options.only not in name:
            continue
        if command is None:
            rows.append({"program": name, "skipped": why})
            print(f"{name}: skipped ({why})", file=sys.stderr)
            continue
        row = measure(name, command, env, keep / f"capture{index}")
        rows.append(row)
        left = "; ".join(f"{reason}: {', '.join(names)}" for reason, names in row["left_out"].items())
        print(f"{name}: kernels seen {row['kernels_seen']}, captured {row['kernels_captured']}, "
              f"passing {row['kernels_passing']}; specs {row['specs_passing']}/{row['specs']} "
              f"pass; same stdout {row['same_stdout']}; {row['plain_s']} s plain, "
              f"{row['capture_s']} s captured ({row['overhead']}x)"
              + (f"; left out: {left}" if left else ""), file=sys.stderr)
    if options.json:
        print(json.dumps(rows, indent=2))
    if not options.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
