"""The `bo` strategy's Gaussian process and its choices (cubinrun/tune/gaussian.py),
on the CPU: the model, expected improvement, and the strategy replayed on
the smooth landscape (tests/support/tunelandscape.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from support import tunelandscape
from support.tuning import best_value, tune_json

pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")


@pytest.fixture
def smooth(tmp_path):
    return tunelandscape.write(tmp_path, "smooth")


def smooth_space(spec, constraints=()):
    from cubinrun.tune.space import load_space
    return load_space(str(spec), {}, constraints=list(constraints))


def measured(points) -> dict:
    from cubinrun.tune.evaluate import Evaluation
    from cubinrun.tune.space import key
    return {key(p): Evaluation(p, "ok", value=tunelandscape.smooth_time(p)) for p in points}


def test_features_are_log2_of_numeric_values_scaled_to_the_unit_interval(smooth):
    from cubinrun.tune.gaussian import features
    space = smooth_space(smooth[0])
    x = features(space, [{"BX": 8, "TILE": 1}, {"BX": 64, "TILE": 4}, {"BX": 1024, "TILE": 8}])
    # BX 8..1024 is log2 3..10; TILE 1..8 is log2 0..3
    assert np.allclose(x, [[0, 0], [3 / 7, 2 / 3], [1, 1]])


def test_the_gaussian_process_interpolates_what_it_was_fitted_to(smooth):
    from cubinrun.tune.gaussian import GaussianProcess, features
    space = smooth_space(smooth[0])
    points = space.valid[::4]
    y = np.array([math.log(tunelandscape.smooth_time(p)) for p in points])
    gp = GaussianProcess(features(space, points), y, np.random.default_rng(0))
    mean, sd = gp.predict(features(space, points))
    assert np.abs(mean - y).max() < 0.01 * np.ptp(y)
    others = [p for p in space.valid if p not in points]
    _, sd_elsewhere = gp.predict(features(space, others))
    assert sd.max() < sd_elsewhere.mean()       # surer where it measured


def test_the_likelihoods_gradient_is_its_derivative(smooth):
    """The fit follows the analytic gradient of the log marginal likelihood:
    it matches central differences in every hyperparameter."""
    from cubinrun.tune.gaussian import GaussianProcess, features
    space = smooth_space(smooth[0])
    points = space.valid[::5]
    y = np.array([math.log(tunelandscape.smooth_time(p)) for p in points])
    gp = GaussianProcess(features(space, points), y, np.random.default_rng(0))
    theta = np.array([-0.5, 0.3, 0.2, -4.0])
    _, grad = gp._nll(theta)
    for j in range(len(theta)):
        step = np.zeros_like(theta)
        step[j] = 1e-5
        numeric = (gp._nll(theta + step)[0] - gp._nll(theta - step)[0]) / 2e-5
        assert grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_expected_improvement_prefers_a_neighbour_of_the_best_to_one_of_the_worst(smooth):
    from cubinrun.tune.evaluate import OBJECTIVES
    from cubinrun.tune.gaussian import BayesOpt
    from cubinrun.tune.space import key
    space = smooth_space(smooth[0])
    # a grid over the landscape; its best is at BX 64, TILE 5, its worst in a corner
    grid = [p for p in space.valid if p["BX"] in (8, 32, 128, 1024) and p["TILE"] in (1, 4, 8)]
    grid.append({"BX": 64, "TILE": 4})
    known = measured(grid)
    bo = BayesOpt(space, OBJECTIVES["time"], seed=0)
    near_best, near_worst = {"BX": 64, "TILE": 5}, {"BX": 512, "TILE": 1}
    assert max(grid, key=tunelandscape.smooth_time) == {"BX": 1024, "TILE": 1}
    scores = bo.scores(known, [bo.row[key(near_best)], bo.row[key(near_worst)]])
    assert scores[0] > 10 * scores[1]
    # and the point it proposes is next to the best measured, not among the grid's gaps
    proposed = bo.next(known, lambda k: k not in known)
    assert abs(math.log2(proposed["BX"]) - 6) <= 1 and abs(proposed["TILE"] - 4) <= 1


def test_it_never_proposes_a_known_or_invalid_point_and_ends_when_all_are_known(smooth):
    from cubinrun.tune.evaluate import OBJECTIVES, Evaluation
    from cubinrun.tune.gaussian import BayesOpt
    from cubinrun.tune.space import key
    space = smooth_space(smooth[0], ["TILE != 3"])
    bo = BayesOpt(space, OBJECTIVES["time"], seed=1)
    known: dict = {}
    for number in range(len(space.valid)):
        point = bo.next(known, lambda k: k not in known)
        assert space.is_valid(point) and key(point) not in known
        # some fail: told the worst value, they are never proposed again either
        if number % 7 == 3:
            known[key(point)] = Evaluation(point, "check failed")
        else:
            known.update(measured([point]))
    assert len(known) == len(space.valid) == 56
    assert bo.next(known, lambda k: k not in known) is None


def test_a_seed_makes_it_reproducible(smooth):
    import sys
    from support.repo import REPO
    sys.path.insert(0, str(REPO / "bench" / "tune"))
    try:
        import tune_strategies
    finally:
        sys.path.pop(0)
    spec, results = map(str, smooth)
    runs = [tune_strategies.run_one(spec, results, "bo", seed, 20) for seed in (3, 3, 4)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


@pytest.mark.parametrize("strategy", ["bo", "bo-local"])
def test_it_finds_the_best_of_a_smooth_landscape(smooth, capsys, strategy):
    """The smooth landscape has one point within 1% of the best, of 64."""
    spec, results = smooth
    for seed in ("0", "1", "2"):
        code, doc, _ = tune_json(capsys, spec, "--replay", results, "--strategy", strategy,
                                 "--max-evals", "25", "--seed", seed)
        assert code == 0 and doc["measured"] == 25
        assert doc["best"]["value"] <= best_value("smooth") * 1.01


def test_maximising_it_seeks_the_largest_value(smooth):
    """Throughput is maximised: the model's targets are the negated logs, so the
    best measured is the largest one and failures count as the smallest."""
    from cubinrun.tune.evaluate import OBJECTIVES, Evaluation
    from cubinrun.tune.gaussian import BayesOpt
    from cubinrun.tune.space import key
    space = smooth_space(smooth[0])
    bo = BayesOpt(space, OBJECTIVES["gbps"], seed=0)
    points = space.valid[:3]
    known = {key(p): Evaluation(p, "ok", value=v) for p, v in zip(points, (10.0, 40.0, 20.0))}
    known[key(space.valid[3])] = Evaluation(space.valid[3], "CUDA error")
    rows, y = bo._observed(known)
    assert [bo.keys[r] for r in rows] == [key(p) for p in space.valid[:4]]
    assert min(y) == -math.log(40.0) and y[3] == max(y) == -math.log(10.0)


def test_past_fit_until_the_model_is_refreshed_only_now_and_then(smooth, monkeypatch):
    """A tune with no --max-evals runs through the whole space: past FIT_UNTIL
    known points the hyperparameters stay, and the GP is conditioned afresh
    only every max(REFRESH, n/4) new points, while every point is still
    proposed once."""
    from cubinrun.tune import gaussian
    from cubinrun.tune.evaluate import OBJECTIVES
    from cubinrun.tune.space import key
    monkeypatch.setattr(gaussian, "FIT_UNTIL", 15)
    monkeypatch.setattr(gaussian, "REFRESH", 8)
    built = []
    real = gaussian.GaussianProcess

    def counted(x, y, rng, start=None, fit=True):
        built.append((len(y), fit))
        return real(x, y, rng, start, fit)

    monkeypatch.setattr(gaussian, "GaussianProcess", counted)
    space = smooth_space(smooth[0])
    bo = gaussian.BayesOpt(space, OBJECTIVES["time"], seed=2)
    known: dict = {}
    while (point := bo.next(known, lambda k: k not in known)) is not None:
        assert key(point) not in known
        known.update(measured([point]))
    assert len(known) == len(space.valid) == 64
    assert [n for n, fit in built if fit] == list(range(10, 16))     # each proposal to 15
    assert [n for n, fit in built if not fit] == [23, 31, 39, 48, 60]      # +8, +8, +8, +9, +12


def test_a_large_space_is_scored_in_chunks_by_a_gp_of_the_best_points(smooth, monkeypatch):
    from cubinrun.tune import gaussian
    from cubinrun.tune.evaluate import OBJECTIVES
    from cubinrun.tune.space import key
    space = smooth_space(smooth[0])
    points = list(space.valid)
    y = np.log([tunelandscape.smooth_time(p) for p in points[:30]])
    gp = gaussian.GaussianProcess(gaussian.features(space, points[:30]), y,
                                  np.random.default_rng(0))
    whole = gp.predict(gaussian.features(space, points))
    monkeypatch.setattr(gaussian, "CHUNK", 7)
    chunked = gp.predict(gaussian.features(space, points))
    assert np.allclose(whole[0], chunked[0]) and np.allclose(whole[1], chunked[1])
    # past MAX_TRAIN known points the GP is conditioned on the best of them
    monkeypatch.setattr(gaussian, "MAX_TRAIN", 20)
    monkeypatch.setattr(gaussian, "FIT_UNTIL", 15)
    trained = []
    real = gaussian.GaussianProcess

    def counted(x, y, rng, start=None, fit=True):
        trained.append((len(known), sorted(y)))
        return real(x, y, rng, start, fit)

    monkeypatch.setattr(gaussian, "GaussianProcess", counted)
    bo = gaussian.BayesOpt(space, OBJECTIVES["time"], seed=3)
    known: dict = {}
    while (point := bo.next(known, lambda k: k not in known)) is not None:
        known.update(measured([point]))
    assert len(known) == 64 and max(len(t) for _, t in trained) == 20
    count, last = trained[-1]
    assert count > 20
    then = sorted(math.log(e.value) for e in list(known.values())[:count])
    assert last == pytest.approx(then[:20])         # the best 20 of those known then
    assert key(min(points, key=tunelandscape.smooth_time)) in known


def test_bo_locals_step_is_the_neighbour_the_model_ranks_first(smooth):
    """bo-local's local step: of the unseen neighbours of the best, the one of the
    highest expected improvement (a neighbour drawn at random while the model
    cannot rank: fewer than INITIAL known)."""
    import random
    from cubinrun.tune.evaluate import OBJECTIVES
    from cubinrun.tune.gaussian import BayesOpt
    from cubinrun.tune.local import local_step, neighbours, ranked
    from cubinrun.tune.space import key
    time_ = OBJECTIVES["time"]
    space = smooth_space(smooth[0])
    # the best known last: it has not stalled, so the step is taken from it
    known = dict(sorted(measured(space.valid[::5]).items(), key=lambda kv: -kv[1].value))
    model = BayesOpt(space, time_, seed=0)

    def free(k):
        return k not in known
    base = ranked(known, time_)[0].point
    found = neighbours(space, base, free)
    scores = model.scores(known, [model.row[key(p)] for p in found])
    step = local_step(space, known, free, time_, random.Random(0),
                      lambda points: model.most_promising(known, points))
    assert step == found[int(np.argmax(scores))]
    few = measured(space.valid[:3])
    assert model.most_promising(few, found) is None
    drawn = local_step(space, few, lambda k: k not in few, time_, random.Random(1),
                       lambda points: model.most_promising(few, points))
    assert drawn in neighbours(space, ranked(few, time_)[0].point, lambda k: k not in few)
