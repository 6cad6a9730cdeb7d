"""`cubinrun tune` on the CPU: strategies replayed on made-up landscapes
(tests/support/tunelandscape.py), storage and resume (SQLite here, PostgreSQL in
test_postgres.py), failing configurations, the pinned spec, the plot,
the dry run, and a tune on the fake driver where configurations fault or fail
their check and the tune goes on."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from support import tunelandscape
from support.cli import run as run_cli
from support.repo import REPO
from support.tuning import best_value, run_concurrently, tune_json

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")


@pytest.fixture
def smooth(tmp_path):
    return tunelandscape.write(tmp_path, "smooth")


def test_brute_force_replay_measures_every_point_and_finds_the_best(smooth, capsys):
    spec, results = smooth
    code, doc, err = tune_json(capsys, spec, "--replay", results, "--strategy", "brute")
    assert code == 0
    assert doc["measured"] == 64 and doc["space"] == {"points": 64, "valid": 64, "skipped": 0}
    assert doc["best"]["value"] == pytest.approx(best_value("smooth"), rel=1e-6)
    assert doc["best"]["point"] == {"BX": 64, "TILE": 5}
    assert doc["best"]["set"] == "--set BX=64 --set TILE=5"
    # every evaluation in order: brute force walks the sweep's order
    assert [e["point"] for e in doc["evaluations"][:3]] == [
        {"BX": 8, "TILE": 1}, {"BX": 8, "TILE": 2}, {"BX": 8, "TILE": 3}]
    assert len(doc["top"]) == 5 and doc["top"][0]["point"] == doc["best"]["point"]
    assert not Path(spec).with_suffix(".tune.sqlite").exists()    # a replay keeps nothing
    assert doc["replay"]["evaluations_to_within"] == next(
        n for n, e in enumerate(doc["evaluations"], 1)
        if e["value"] <= best_value("smooth") * 1.01)


def test_replays_with_other_seeds_keep_nothing_and_give_their_own_answers(tmp_path, capsys):
    """The issue's case: two replays one after the other, only --seed differing,
    on the rugged landscape; each searches afresh and says how soon it came
    within 1% of the landscape's best."""
    spec, results = tunelandscape.write(tmp_path, "waves")
    runs = []
    for seed in ("1", "2"):
        code, out, err = run_cli(capsys, "tune", spec, "--replay", results, "--max-evals", "30",
                                 "--seed", seed, "--json")
        runs.append(json.loads(out))
        assert code == 0 and runs[-1]["measured"] == 30 and runs[-1]["stored"] == 0
        assert runs[-1]["storage"].startswith("memory")
    assert [e["point"] for e in runs[0]["evaluations"]] != \
        [e["point"] for e in runs[1]["evaluations"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["waves.jsonl", "waves.yaml"]
    code, _, err = run_cli(capsys, "tune", spec, "--replay", results, "--strategy", "brute",
                           "--max-evals", "5")
    best = min(tunelandscape.values("waves"))
    assert f"not within 1% of the replay's best ({best:.4g} us) in 5 evaluations" in err


def test_a_resumed_tune_measures_nothing_again(smooth, tmp_path, capsys):
    spec, results = smooth
    storage = ("--storage", f"sqlite:///{tmp_path}/study.sqlite")
    code, first, _ = tune_json(capsys, spec, "--replay", results, "--strategy", "random",
                               "--max-evals", "20", "--seed", "3", *storage)
    assert code == 0 and first["measured"] == 20
    code, second, err = tune_json(capsys, spec, "--replay", results, "--strategy", "random",
                                  "--max-evals", "20", "--seed", "3", *storage)
    assert code == 0 and second["measured"] == 0 and second["stored"] == 20
    assert second["best"]["point"] == first["best"]["point"]
    assert (first["best"]["origin"], second["best"]["origin"]) == ("measured", "stored")
    assert second["best"]["by"] == "random seed 3"
    code, _, err = run_cli(capsys, "tune", spec, "--replay", results, "--max-evals", "20",
                           "--seed", "4", *storage)
    assert code == 0 and "(random seed 3), read from storage" in err
    assert "--max-evals 20 measures nothing more" in err
    # another strategy continues the study: the 20 are reused, said to be random's,
    # and never counted as its own
    code, third, _ = tune_json(capsys, spec, "--replay", results, "--strategy", "brute",
                               *storage)
    assert third["measured"] == 44 and third["stored"] == 20
    by = [e["by"] for e in third["evaluations"]]
    assert by.count("random seed 3") == 20 and by.count("brute") == 44
    measured = [e["point"] for e in third["evaluations"]]
    assert len({json.dumps(p, sort_keys=True) for p in measured}) == 64     # none twice


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_outside_numpys_range_is_refused(smooth, capsys, seed):
    """Found by the fuzzer: Optuna's random sampler passed it to NumPy, which raised."""
    spec, results = smooth
    code, _, err = tune_json(capsys, spec, "--replay", results, "--strategy", "random",
                             "--max-evals", "3", "--seed", seed)
    assert code == 2 and "'--seed'" in err and "0<=x<=4294967295" in err


def test_a_seed_makes_a_random_tune_reproducible(tmp_path, capsys):
    orders = []
    for run in range(2):
        folder = tmp_path / str(run)
        folder.mkdir()
        spec, results = tunelandscape.write(folder, "smooth")
        _, doc, _ = tune_json(capsys, spec, "--replay", results, "--strategy", "tpe",
                              "--max-evals", "25", "--seed", "11")
        orders.append([e["point"] for e in doc["evaluations"]])
    assert orders[0] == orders[1] and len(orders[0]) == 25


@pytest.mark.parametrize("strategy", ["tpe", "cmaes"])
def test_model_based_strategies_come_near_the_best_on_a_smooth_landscape(smooth, capsys,
                                                                          strategy):
    spec, results = smooth
    code, doc, _ = tune_json(capsys, spec, "--replay", results, "--strategy", strategy,
                             "--max-evals", "25", "--seed", "1")
    assert code == 0 and doc["measured"] == 25
    assert doc["best"]["value"] <= best_value("smooth") * 1.05


def test_the_default_strategy_finds_the_best_within_60_evaluations(tmp_path):
    """The bench's measure (bench/tune/tune_strategies.py), on 5 seeds: the default
    comes within 1% of the best in 60 evaluations for most on the reduction
    landscape (5 points of 792 within 1%); random search, on the same seeds,
    mostly does not. (The rugged `waves` landscape needs more seeds than a
    test can afford to tell the strategies apart: docs/tune.md has 40.)"""
    kind = "reduction"
    sys.path.insert(0, str(REPO / "bench" / "tune"))
    try:
        import tune_strategies
    finally:
        sys.path.pop(0)
    from cubinrun.tune.evaluate import OBJECTIVES, evaluations_to
    from cubinrun.tune.strategies import DEFAULT
    spec, results = map(str, tunelandscape.write(tmp_path, kind))
    best = best_value(kind)

    def hits(strategy: str) -> int:
        return sum(evaluations_to(tune_strategies.run_one(spec, results, strategy, seed, 60),
                                  best, OBJECTIVES["time"]) is not None for seed in range(5))
    assert hits(DEFAULT) >= 4 > hits("random")


def test_a_local_step_is_an_unseen_valid_neighbour_of_the_best(smooth):
    """Before the best stalls: every step is one of its unseen valid neighbours."""
    import random
    from cubinrun.tune.evaluate import OBJECTIVES, Evaluation
    from cubinrun.tune.local import local_step
    from cubinrun.tune.space import key, load_space
    spec, _ = smooth
    space = load_space(str(spec), {}, constraints=["TILE != 3"])
    known = {key(p): Evaluation(p, "ok", value=v) for p, v in
             [({"BX": 64, "TILE": 4}, 1.0), ({"BX": 8, "TILE": 1}, 2.0),
              ({"BX": 64, "TILE": 5}, None)]}
    known[key({"BX": 64, "TILE": 5})].status = "check failed"
    rng, seen = random.Random(0), set()
    for _ in range(200):
        step = local_step(space, known, lambda k: k not in known, OBJECTIVES["time"], rng)
        differs = [a for a in step if step[a] != {"BX": 64, "TILE": 4}[a]]
        assert len(differs) == 1 and space.is_valid(step) and key(step) not in known
        seen.add(key(step))
    # every neighbour comes up: 7 other BX, 5 other TILE (3 fails the constraint, 5 is known)
    assert len(seen) == 12
    everything = {key(p): Evaluation(p, "ok", value=1.0) for p in space.valid}
    assert local_step(space, everything, lambda k: k not in everything, OBJECTIVES["time"],
                      rng) is None


def test_a_stalled_local_search_steps_from_the_runners_up_in_turn(smooth, monkeypatch):
    """While the best improves, the steps are its neighbours; after STALL
    evaluations without a new best, the second best's, then the third's (the
    top 3 here), then the best's again; a base whose neighbours are all known
    passes its turn on."""
    import random
    from cubinrun.tune import local
    from cubinrun.tune.evaluate import OBJECTIVES, Evaluation
    from cubinrun.tune.space import key, load_space
    spec, _ = smooth
    space = load_space(str(spec), {})
    time_ = OBJECTIVES["time"]
    monkeypatch.setattr(local, "TOP_K", 3)
    top = [{"BX": 64, "TILE": 4}, {"BX": 8, "TILE": 8}, {"BX": 1024, "TILE": 1}]
    known = {key(p): Evaluation(p, "ok", value=v) for p, v in zip(top, (1.0, 2.0, 3.0))}
    rng = random.Random(0)

    def base_of_steps() -> set[str]:
        """Those of the top points (and a new best) that each of 30 steps is an
        unseen neighbour of: the base (two of them share two neighbours, never 30)."""
        steps = [local.local_step(space, known, lambda k: k not in known, time_, rng)
                 for _ in range(30)]
        assert all(key(step) not in known for step in steps)
        points = top + [{"BX": 32, "TILE": 5}]
        return {key(p) for p in points
                if all(sum(step[a] != p[a] for a in p) == 1 for step in steps)}

    def add_worse(count: int) -> None:
        for p in [p for p in space.valid if key(p) not in known][:count]:
            known[key(p)] = Evaluation(p, "ok", value=10.0)

    assert local.stalled(known, time_) == 2             # the best came first
    assert base_of_steps() == {key(top[0])}
    add_worse(local.STALL - 3)                          # not yet stalled long enough
    assert base_of_steps() == {key(top[0])}
    add_worse(1)
    assert local.stalled(known, time_) == local.STALL
    assert base_of_steps() == {key(top[1])}
    add_worse(local.STALL)
    assert base_of_steps() == {key(top[2])}
    add_worse(local.STALL)
    assert base_of_steps() == {key(top[0])}             # round again
    # the best's neighbours all known (measured before it: the stall is the
    # same): its turn goes to the next base
    stall = local.stalled(known, time_)
    known = {**{key(p): Evaluation(p, "ok", value=10.0)
                for p in local.neighbours(space, top[0], lambda k: k not in known)}, **known}
    assert local.stalled(known, time_) == stall
    assert base_of_steps() == {key(top[1])}
    # a new best: its neighbours again, and the count starts over
    known[key({"BX": 32, "TILE": 5})] = Evaluation({"BX": 32, "TILE": 5}, "ok", value=0.5)
    assert local.stalled(known, time_) == 0
    assert base_of_steps() == {key({"BX": 32, "TILE": 5})}


def test_failed_configurations_are_recorded_and_never_win(tmp_path, capsys):
    best = min(tunelandscape.points(tunelandscape.SMOOTH_AXES), key=tunelandscape.smooth_time)
    failing = {json.dumps(best, sort_keys=True): {
        "exit_code": 1, "status": "check failed",
        "check": {"passed": False, "outputs": {"out": {"passed": False}}}}}
    other = {"BX": 8, "TILE": 1}
    failing[json.dumps(other, sort_keys=True)] = {
        "exit_code": 3, "status": "build error",
        "error": {"type": "build", "message": "NVRTC: too many resources"}}
    spec, results = tunelandscape.write(tmp_path, "smooth", fail=failing)
    code, doc, _ = tune_json(capsys, spec, "--replay", results, "--strategy", "brute")
    assert code == 0
    assert doc["best"]["point"] != best and doc["measured"] == 64
    by_point = {json.dumps(e["point"], sort_keys=True): e for e in doc["evaluations"]}
    assert by_point[json.dumps(best, sort_keys=True)]["status"] == "check failed"
    assert by_point[json.dumps(best, sort_keys=True)]["reason"] == "check failed: out"
    built = by_point[json.dumps(other, sort_keys=True)]
    assert built["status"] == "build error" and "too many resources" in built["reason"]
    assert all(c["point"] != best for c in doc["top"])


def test_exit_1_when_no_configuration_passes_its_check(tmp_path, capsys):
    fail = {json.dumps(p, sort_keys=True): {"exit_code": 1, "status": "check failed",
                                            "check": {"passed": False}}
            for p in tunelandscape.points(tunelandscape.SMOOTH_AXES)}
    spec, results = tunelandscape.write(tmp_path, "smooth", fail=fail)
    code, doc, _ = tune_json(capsys, spec, "--replay", results, "--strategy", "random",
                             "--max-evals", "10")
    assert code == 1 and doc["best"] is None and doc["measured"] == 10


def test_the_pinned_spec_sets_the_best_values_and_drops_the_sweep(smooth, tmp_path, capsys):
    from cubinrun.specfile.yamlload import load_yaml_file
    spec, results = smooth
    best = tmp_path / "best.yaml"
    code, out, err = run_cli(capsys, "tune", spec, "--replay", results, "--strategy", "brute",
                             "-o", best)
    assert code == 0 and "best: --set BX=64 --set TILE=5" in out
    tree = load_yaml_file(best)
    assert tree["vars"] == {"BX": 64, "TILE": 5} and "sweep" not in tree
    assert best.read_text().startswith("# tuned by cubinrun tune")
    assert "# A landscape for replayed tunes" in best.read_text()       # comments kept
    code, _, err = run_cli(capsys, "tune", spec, "--replay", results, "-o", best)
    assert code == 2 and "exists; pass --force" in err
    code, _, _ = run_cli(capsys, "tune", spec, "--replay", results, "-o", best, "--force")
    assert code == 0


def test_the_plot_of_the_objective_against_evaluations(smooth, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    spec, results = smooth
    plot = tmp_path / "tune.png"
    code, _, _ = run_cli(capsys, "tune", spec, "--replay", results, "--max-evals", "12",
                         "--seed", "1", "--plot", plot)
    assert code == 0 and plot.read_bytes()[:4] == b"\x89PNG"


def test_usage_errors_are_one_line(smooth, tmp_path, capsys):
    spec, results = smooth
    code, _, err = run_cli(capsys, "tune", spec, "--replay", results, "--devices", "0")
    assert code == 2 and "--replay runs nothing" in err
    code, _, err = run_cli(capsys, "tune", spec, "--replay", tmp_path / "none.jsonl")
    assert code == 2 and "none.jsonl" in err and "Traceback" not in err
    empty = tmp_path / "other.yaml"
    empty.write_text(Path(spec).read_text().split("sweep:")[0])
    code, _, err = run_cli(capsys, "tune", empty, "--replay", results)
    assert code == 2 and "nothing to tune" in err
    code, _, err = run_cli(capsys, "tune", spec, "--replay", results, "--storage",
                           "nosuchdb://x")
    assert code == 2 and err.startswith("error: --storage nosuchdb://x")


def test_a_time_limit_too_short_for_anything_still_runs_the_first_batch(smooth, capsys):
    spec, results = smooth
    code, doc, _ = tune_json(capsys, spec, "--replay", results, "--strategy", "brute",
                             "--time-limit", "1e-300")
    assert code == 0 and doc["measured"] == 1 and doc["best"] is not None


def test_a_time_limit_of_nan_is_refused_in_one_line(smooth, capsys):
    spec, results = smooth
    code, _, err = run_cli(capsys, "tune", spec, "--replay", results, "--time-limit", "nan")
    assert code == 2 and err == "error: --time-limit nan: expected a number of seconds above 0\n"


def test_a_replay_of_another_space_is_refused(smooth, tmp_path, capsys):
    spec, _ = smooth
    _, other = tunelandscape.write(tmp_path, "reduction")
    code, _, err = run_cli(capsys, "tune", spec, "--replay", other)
    assert code == 2 and "holds none of the 64 points" in err


def test_two_processes_share_one_sqlite_study(smooth):
    """Both tune the same study at once: together they measure the space, each
    point once (more attempts: tests/project/test_shared_database.py), and a third run
    finds everything stored."""
    spec, results = smooth
    args = [spec, "--replay", str(results), "--strategy", "brute",
            "--storage", f"sqlite:///{Path(spec).with_suffix('.tune.sqlite')}"]
    docs = run_concurrently(args, 2)
    measured = [json.dumps(e["point"], sort_keys=True) for d in docs for e in d["evaluations"]
                if e["origin"] == "measured"]
    assert set(measured) == {json.dumps(p, sort_keys=True)
                             for p in tunelandscape.points(tunelandscape.SMOOTH_AXES)}
    assert len(measured) == 64
    third = run_concurrently(args, 1)[0]
    assert third["measured"] == 0


@pytest.mark.parametrize("strategy", ["brute", "tpe"])
def test_only_points_the_constraints_leave_are_evaluated(smooth, capsys, strategy):
    spec, results = smooth
    code, doc, _ = tune_json(capsys, spec, "--replay", results, "--strategy", strategy,
                             "--constraint", "BX * TILE <= 512", "--seed", "2",
                             "--max-evals", "30")
    valid = [p for p in tunelandscape.points(tunelandscape.SMOOTH_AXES)
             if p["BX"] * p["TILE"] <= 512]
    assert code == 0 and doc["space"]["valid"] == len(valid)
    assert doc["measured"] == min(30, len(valid))
    assert all(e["point"]["BX"] * e["point"]["TILE"] <= 512 for e in doc["evaluations"])


# -- on the fake driver: real runs in worker processes --

FAKE_SPEC = """\
kernel:
  cubin: k{KID}.cubin
  name: add_kernel
signature: {x: "*fp32", y: "*fp32", out: "*fp32", n: i32}
vars: {N: 4096, BLOCK: 256, KID: 1}
args:
  x: {shape: [N], init: random}
  y: {shape: [N], init: random}
  out: {shape: [N], init: zeros}
  n: N
grid: [cdiv(N, BLOCK)]
check:
  out: {expect: (BLOCK - 256) * x}    # the fake runs no kernel: only BLOCK=256 passes
sweep:
  BLOCK: [256, 512]
  KID: [1, 2]
"""


@pytest.fixture
def fake_sweep(tmp_path, fake_libcuda, monkeypatch):
    """A sweep on the fake driver whose KID=2 binary faults (a sticky error that
    replaces the worker) and whose BLOCK=512 points fail their check."""
    from cubinrun.runs import executor
    from support.fakes import VECTOR_ADD_PARAMS
    cubin = (REPO / "kernels" / "build" / "vector_add.sm_90.cubin").read_bytes()
    (tmp_path / "k1.cubin").write_bytes(cubin)
    (tmp_path / "k2.cubin").write_bytes(cubin + b"FAULTS-HERE")
    spec = tmp_path / "sweep.yaml"
    spec.write_text(FAKE_SPEC)
    monkeypatch.setattr(executor, "WORKER_SETUP", "fakecuda.worker:install")
    monkeypatch.setenv("FAKECUDA_STICKY_MARKER", "FAULTS-HERE")
    fake_libcuda.set_param_sizes(VECTOR_ADD_PARAMS)
    return spec


def test_a_tune_goes_on_past_faults_and_failed_checks(fake_sweep, device, capsys):
    code, doc, err = tune_json(capsys, fake_sweep, "--strategy", "brute", "--warmup", "1",
                               "--rep", "0.001", "--min-samples", "25", "--top-k", "2",
                               "--rounds", "2")
    assert code == 0, err
    status = {(e["point"]["BLOCK"], e["point"]["KID"]): e for e in doc["evaluations"]}
    assert status[(256, 1)]["status"] == "ok" and status[(256, 1)]["checked"]
    assert status[(256, 1)]["timing"]["samples"] == 25      # the budget alone gives 10
    # where each run's time went, as launch's stages_s, with the timing's own
    assert {"init", "upload", "launch", "check", "timing"} <= set(status[(256, 1)]["stages_s"])
    assert set(doc["seconds"]) == {"to_first_run", "search", "retime", "close"}
    assert all(s >= 0 for s in doc["seconds"].values())
    # summed over the tune's measured runs: a stage's total is its runs' sum
    spent = doc["spent_s"]
    measured = [e for e in doc["evaluations"] if e["origin"] == "measured"]
    assert spent["upload"] == pytest.approx(
        sum((e["stages_s"] or {}).get("upload", 0) for e in measured), abs=2e-3)
    assert spent["build_and_load"] > 0 and spent["compile_ahead"] >= 0
    assert sum(doc["seconds"].values()) <= doc["wall_s"] + 0.01
    assert status[(512, 1)]["status"] == "check failed"
    for block in (256, 512):
        assert status[(block, 2)]["status"] == "CUDA error"
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in status[(block, 2)]["reason"]
    assert doc["best"]["point"] == {"BLOCK": 256, "KID": 1}
    assert doc["device"]["name"] == "Fake H200"
    assert [c["point"] for c in doc["top"]] == [{"BLOCK": 256, "KID": 1}]
    assert len(doc["top"][0]["rounds"]) == 2 and doc["retimed"]           # re-timed twice
    # resumed: nothing is measured again, not even the re-timing
    code, again, _ = tune_json(capsys, fake_sweep, "--strategy", "brute", "--top-k", "2",
                               "--rounds", "2")
    assert code == 0 and again["measured"] == 0 and not again["retimed"]
    assert again["best"]["point"] == {"BLOCK": 256, "KID": 1}


def test_the_dry_run_builds_the_space_and_names_what_fails(tmp_path, capsys):
    (tmp_path / "k.cu").write_text(
        'extern "C" __global__ void fill(float* out, int n) {\n'
        "#if BAD\n  this is not C++;\n#endif\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = VALUE;\n}\n")
    spec = tmp_path / "fill.yaml"
    spec.write_text(
        "kernel:\n  source: k.cu\n  name: fill\n  arch: sm_90\n"
        '  options: ["-DBAD={BAD}", "-DVALUE={V}"]\n'
        'signature: {out: "*fp32", n: i32}\n'
        "vars: {BAD: 0, V: 1}\n"
        "args:\n  out: {shape: [256], init: zeros}\n  n: 256\n"
        "grid: [1]\nlaunch: {num_warps: 8}\n"
        "check:\n  out: {expect: V}\n"
        "sweep:\n  BAD: [0, 1]\n  V: [1, 2]\n"
        "constraints:\n  - V + BAD < 3\n")
    code, doc, err = tune_json(capsys, spec, "--dry-run")
    assert code == 0, err
    assert (doc["points"], doc["valid"], doc["skipped"], doc["built"]) == (4, 3, 1, 2)
    assert [f["point"] for f in doc["failed"]] == [{"BAD": 1, "V": 1}]
    assert doc["failed"][0]["status"] == "build error"
    assert doc["failed"][0]["reason"].startswith("NVRTC failed to compile ")
    assert "k.cu for sm_90" in doc["failed"][0]["reason"]
    code, out, _ = run_cli(capsys, "tune", spec, "--dry-run")
    assert code == 0 and "4 points, 3 left by the constraints, 2 build (sm_90" in out


def test_several_gpus_evaluate_at_once_against_one_storage(fake_sweep, fake_libcuda,
                                                           monkeypatch, capsys):
    from fakecuda.device import FakeDevice
    from cubinrun.gpu import driver
    monkeypatch.setenv("FAKECUDA_DEVICES", "2")
    fake = FakeDevice(lambda: fake_libcuda.launch_count, fake_libcuda)
    monkeypatch.setattr(driver, "call", fake)
    code, doc, err = tune_json(capsys, fake_sweep, "--strategy", "brute", "--devices", "0,1",
                               "--warmup", "1", "--rep", "1", "--top-k", "1", "--rounds", "1")
    assert code == 0, err
    assert doc["measured"] == 4 and doc["best"]["point"] == {"BLOCK": 256, "KID": 1}
    assert sorted(e["status"] for e in doc["evaluations"]) == [
        "CUDA error", "CUDA error", "check failed", "ok"]


def test_a_point_whose_build_failed_ahead_is_recorded_without_a_run(smooth, tmp_path):
    """The pool's build says how the run would end (tune/prebuild.py): such a
    point takes no turn on the GPU. The first batch never waits for the pool,
    nor goes to it."""
    from cubinrun.tune import store
    from cubinrun.tune.evaluate import OBJECTIVES, ReplayEvaluator
    from cubinrun.tune.prebuild import Built
    from cubinrun.tune.search import Budget, Search
    from cubinrun.tune.space import key, load_space
    from cubinrun.tune.strategies import make_sampler
    spec, results = smooth
    space = load_space(spec, {})
    objective = OBJECTIVES["time"]
    replay = ReplayEvaluator(results, objective)
    first, bad = space.valid[0], space.valid[3]
    ran, waited, submitted = [], [], []

    class Recording:
        width = 1

        def start(self):
            pass

        def evaluate(self, points):
            ran.extend(points)
            return replay.evaluate(points)

    class Pool:
        def submit(self, points):
            submitted.extend(points)

        def wait(self, points):
            waited.extend(points)
            return [Built("invalid", 3, "needs 99 KiB of shared memory") if key(p) == key(bad)
                    else Built("ok") for p in points]
    study = store.open_study(f"sqlite:///{tmp_path}/s.sqlite", "t", objective.direction,
                             make_sampler("brute", None))
    search = Search(space, study, "brute", Recording(), objective, Budget(8), lambda p: "in",
                    prebuilder=Pool())
    evaluations = search.run()
    assert [e.point for e in evaluations] == space.valid[:8]
    assert (evaluations[3].status, evaluations[3].reason, evaluations[3].exit_code) == (
        "invalid", "needs 99 KiB of shared memory", 3)
    assert ran == [p for p in space.valid[:8] if p != bad]
    assert first not in waited and bad in waited
    # the first point is its worker's to build, and the pool builds it no second time;
    # brute force knows its order, so the rest of the budget went to the pool at once
    assert first not in submitted and submitted[:7] == space.valid[1:8]


def test_only_a_missing_sqlite_file_is_surely_a_new_storage(tmp_path):
    """A new storage means every point will run, so the workers start at once."""
    from cubinrun.tune.store import is_new
    existing = tmp_path / "old.sqlite"
    existing.write_bytes(b"")
    assert is_new(f"sqlite:///{tmp_path}/new.sqlite")
    assert not is_new(f"sqlite:///{existing}")
    assert not is_new("sqlite:///:memory:") and not is_new("sqlite://")
    assert not is_new("postgresql://tuner@db/tunes")


def test_a_tune_without_optuna_says_which_extra_it_needs(smooth, capsys, monkeypatch):
    # checked before any worker starts; the import itself waits until they have
    monkeypatch.setitem(sys.modules, "optuna", None)
    spec, results = smooth
    code, _, err = tune_json(capsys, spec, "--replay", results, "--strategy", "brute")
    assert code == 2
    assert err == "error: cubinrun tune needs Optuna, an optional extra: " \
                  "pip install 'cubinrun[tune]'\n"


def test_points_that_share_a_binary_build_it_once(smooth):
    """The smooth landscape's kernel section reads no var: all 64 points share
    one binary. The pool gets the first; the rest wait for it, then each
    checks its own plan against the cached binary."""
    from concurrent.futures import Future
    from cubinrun.tune.prebuild import Built, Prebuilder
    from cubinrun.tune.space import key, load_space
    spec, _ = smooth
    (Path(spec).parent / "k.cubin").write_bytes(b"")
    space = load_space(str(spec), {})
    submitted = []

    class Pool:
        def submit(self, function, spec, overrides, point, arch, props):
            submitted.append(point)
            future = Future()
            if len(submitted) > 1:
                future.set_result(Built("ok"))
            return future

        def shutdown(self, **_):
            pass

    builder = Prebuilder(space, "sm_90", pool=Pool())
    builder.submit(space.valid)
    assert submitted == [space.valid[0]]
    first = builder.futures[key(space.valid[0])]
    builder.submit(space.valid[:2])                 # still compiling: the rest wait
    assert submitted == [space.valid[0]]
    first.set_result(Built("ok"))
    assert [b.status for b in builder.wait(space.valid[:3])] == ["ok"] * 3
    assert submitted == space.valid          # each once, the first first
