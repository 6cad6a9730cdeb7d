#!/usr/bin/env bash
# cubinrun tune against Kernel Tuner 1.5 on Kernel Tuner's own matmul example
# (40 points after its restriction, 36 that build), side by side on one GPU:
#   1. Kernel Tuner's brute force (twice: a first and a second run);
#   2. `cubinrun tune --strategy brute` from a cold cache (a fresh
#      CUBINRUN_CACHE_DIR and no storage), then the same command again, which
#      resumes from storage and must measure nothing (goal: the first at most
#      10 s, half of Kernel Tuner's 20.6 s measured on the H200);
#   3. the exhaustive sweep of the same space as `launch --jsonl`, and every
#      strategy replayed on it (bench/tune/tune_strategies.py) and on the synthetic
#      landscapes (TUNE_LANDSCAPE=0 leaves this step out).
# cubinrun takes at least 7 samples a configuration (--min-samples 7), as
# Kernel Tuner times each configuration 7 times; it also checks every one.
# Run from the repository root on the GPU machine, with Kernel Tuner's wheel
# in .whl/ and the kernel fetched (kernels/thirdparty/fetch.sh, on a machine
# that reaches GitHub, before the tree is carried there). Writes under
# ${OUT:-bench/tune/results}.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/tune/results}
mkdir -p "$out"
python=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"   # this tree's cubinrun
spec=configs/realkernels/kt_matmul_tune.yaml
source=kernels/thirdparty/kernel_tuner/examples/cuda/matmul.cu
if [[ ! -f $source ]]; then
    if [[ -x kernels/thirdparty/fetch.sh ]]; then kernels/thirdparty/fetch.sh || true; fi
    [[ -f $source ]] || { echo "no $source: run kernels/thirdparty/fetch.sh where GitHub is reachable" >&2; exit 2; }
fi
if [[ -d .whl ]]; then      # no package index there: the wheels that were carried
    for package in kernel_tuner optuna sqlalchemy cmaes; do
        $python -c "import $package" 2>/dev/null && continue    # gpu_all.sh installed it
        $python -m pip install -q --no-index --find-links .whl "$package" 2>/dev/null ||
            echo "note: $package is not in .whl/" >&2
    done
fi
# Both tools' Python as `pip install` leaves it, compiled to bytecode: the GPU
# machine's image sets PYTHONDONTWRITEBYTECODE and .whl/ is installed with
# --no-compile, so otherwise every process of either tool (cubinrun's worker
# and build pool too) compiles Optuna, SQLAlchemy and itself from source
# (2.2 s of the tune's main process under cProfile, bench/profiled.py).
$python - <<'PY' | xargs $python -m compileall -q -j 0 cubinrun
import importlib.util
for name in ("kernel_tuner", "optuna", "sqlalchemy", "alembic", "cmaes", "cupy", "numpy"):
    spec = importlib.util.find_spec(name)
    if spec and spec.submodule_search_locations:
        print(list(spec.submodule_search_locations)[0])
PY
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$out/tune_gpu.txt"

echo "== Kernel Tuner brute force (two runs)"
backend=cupy
$python -c "import cupy" 2>/dev/null || backend=nvcuda
for run in 1 2; do      # wall_s: its tune_kernel call; process_s: the whole process
    start=$(date +%s.%N)
    line=$($python bench/tune/kt_matmul_tune.py "$source" "$backend")
    end=$(date +%s.%N)
    echo "${line%\}}, \"process_s\": $(python3 -c "print(round($end - $start, 2))")}" |
        tee -a "$out/tune_kernel_tuner.jsonl"
done

echo "== cubinrun tune --strategy brute (cold cache, then resumed)"
export CUBINRUN_CACHE_DIR; CUBINRUN_CACHE_DIR=$(mktemp -d)
storage=$(mktemp -d)/kt_matmul.sqlite
for run in cold resumed; do
    start=$(date +%s.%N)
    # at least 7 samples a configuration, as Kernel Tuner times each 7 times
    $python -m cubinrun tune "$spec" --strategy brute --json --storage "sqlite:///$storage" \
        --min-samples 7 \
        >"$out/tune_cubinrun_$run.json" 2>"$out/tune_cubinrun_$run.log"
    code=$?
    end=$(date +%s.%N)
    $python - "$out/tune_cubinrun_$run.json" "$run" "$code" "$start" "$end" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
best = doc["best"] or {}
print(json.dumps({"tool": "cubinrun tune", "run": sys.argv[2], "exit": int(sys.argv[3]),
                  "wall_s": round(float(sys.argv[5]) - float(sys.argv[4]), 2),
                  "measured": doc["measured"], "stored": doc["stored"],
                  "valid": doc["space"]["valid"],
                  "ok": sum(e["status"] == "ok" for e in doc["evaluations"]),
                  "best": best.get("point"), "best_ms": (best.get("value") or 0) / 1000,
                  "top_span": doc["span"], "retimed": doc["retimed"],
                  "seconds": doc.get("seconds"), "spent_s": doc.get("spent_s")}))
PY
done | tee "$out/tune_cubinrun.jsonl"

[[ ${TUNE_LANDSCAPE:-1} == 0 ]] && exit 0     # 1 and 2 only (a short device call)
echo "== the exhaustive sweep as a landscape, and the strategies replayed on it"
$python -m cubinrun launch "$spec" --jsonl "$out/tune_matmul_landscape.jsonl" >/dev/null 2>&1
$python bench/tune/tune_strategies.py "$spec" "$out/tune_matmul_landscape.jsonl" \
    --max-evals 40 | tee "$out/tune_strategies_matmul.txt"
$python bench/tune/tune_strategies.py | tee "$out/tune_strategies_synthetic.txt"
