#!/usr/bin/env bash
# Everything that needs the GPU, in named stages, for one machine lease:
#   bash bench/gpu_all.sh OUTDIR STAGE...
# Stages: tests (every gpu-marked test), launch, data, suite, fidelity (each
# timer against ncu; --timer cupti needs cupti-python from .whl/), noise
# (--max-noise 0.5% against the fixed budget), energy (--energy's CV), debug,
# scale, startup, sweep, wheel (the built wheel, installed; needs
# .whl/dist/cubinrun-*.whl); ROUNDS=N sets the suite's and scale's rounds (3).
# Each stage's output goes to OUTDIR/<stage>.txt and its JSON beside it; the
# last lines of each are printed as it ends. Wheels the machine lacks are
# installed first from .whl/ (see bench/README.md), and they and cubinrun are
# compiled to bytecode, as a user's pip install leaves them.
set -u
out=${1:?usage: gpu_all.sh OUTDIR STAGE...}
shift
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit
    export PYTHONPATH=$PWD:/tmp/site
    # bytecode as `pip install` leaves it: the image sets PYTHONDONTWRITEBYTECODE,
    # so every process would otherwise compile these from source
    python3 -m compileall -q -j 0 /tmp/site >/dev/null
else
    export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1

stage() {   # stage NAME COMMAND...: run it, keep its output, show its end
    local name=$1; shift
    local start=$SECONDS
    echo "== $name: $*"
    "$@" >"$out/$name.txt" 2>&1
    local rc=$?
    tail -n 25 "$out/$name.txt"
    echo "== $name: exit $rc after $((SECONDS - start)) s"
}

python3 -m compileall -q -j 0 cubinrun >/dev/null
for s in "$@"; do
    case $s in
        tests)    stage tests python3 -m pytest -q -m gpu -p no:cacheprovider tests ;;
        launch)   stage launch python3 bench/launch/launch_overhead.py --rounds 15 \
                      --json "$out/launch_overhead.json" ;;
        launch-old)   # the same bench from an older tree unpacked in .old/ (git archive REV;
                      # a tree from before bench/ had folders keeps it in bench/ itself)
                  old=.old/bench/launch/launch_overhead.py
                  [ -e "$old" ] || old=.old/bench/launch_overhead.py
                  stage launch-old env PYTHONPATH="$PWD/.old:${PYTHONPATH#$PWD:}" \
                      python3 "$old" --rounds 15 \
                      --json "$out/launch_overhead_old.json" ;;
        tune)     stage tune env OUT="$out" bash bench/tune/tune_vs_kernel_tuner.sh ;;
        checks)   stage checks python3 bench/data/check_sweep.py "$out" --rounds ${ROUNDS:-2} \
                      --spec configs/realkernels/kt_matmul.yaml --spec-budget ;;
        data)     stage data python3 bench/data/data_scale.py ;;
        data-repeat) stage data-repeat python3 bench/data/data_scale.py --sizes 24,28 --repeat 3 ;;
        suite)    stage suite python3 bench/scale/suite.py "$out" --rounds ${ROUNDS:-3} ;;
        fidelity) stage fidelity python3 bench/timing/timing_fidelity.py "$out" ;;
        noise)    stage noise python3 bench/scale/suite.py "$out" --noise --rounds ${ROUNDS:-3} ;;
        energy)   stage energy python3 bench/energy/energy.py "$out" ;;
        debug)    stage debug python3 bench/debug/debug_tools.py --runs 3 --rounds 8 ;;
        scale)    stage scale python3 bench/scale/scale.py "$out" --rounds ${ROUNDS:-3} ;;
        startup)  stage startup python3 bench/startup/startup.py --runs 9 ;;
        sweep)    stage sweep python3 -m cubinrun launch configs/vector_add.yaml \
                      --axis "N[pow2]=[16:28:2]" --plot "$out/vector_add_sweep_h200.png" \
                      --jsonl "$out/sweep.jsonl" ;;
        wheel)    stage wheel bash bench/packaging/wheel_acceptance.sh ;;
        *)        echo "unknown stage $s"; exit 2 ;;
    esac
done
