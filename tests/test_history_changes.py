"""Change points on synthetic series shaped like H200 noise between fresh
processes (bench/history_detection.py measures the rates at scale)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ruptures", reason="history check needs the history extra (ruptures)")

from cubinrun.history.changes import find_changes  # noqa: E402
from cubinrun.history.noise import point_noise, spread_noise  # noqa: E402


def series(seed: int, n: int, sigma: float, steps=(), odd=0.0):
    rng = np.random.default_rng(seed)
    level = np.full(n, 100.0)
    for at, factor in steps:
        level[at:] *= factor
    values = level * np.exp(rng.normal(0, sigma, n))
    slow = rng.random(n) < odd                  # processes slow or fast as a whole
    values[slow] *= np.exp(rng.choice([-1, 1], slow.sum()) * 5 * sigma)
    return values


@pytest.mark.parametrize("seed", range(5))
def test_steps_are_found_at_their_commit(seed):
    rng = np.random.default_rng(100 + seed)
    at = sorted(rng.choice(np.arange(20, 180), 2, replace=False))
    if at[1] - at[0] < 25:
        at[1] = at[0] + 25
    values = series(seed, 220, 0.01, [(at[0], 1.05), (at[1], 1 / 1.08)], odd=0.02)
    found = find_changes(values)
    assert [c.index for c in found] == pytest.approx(at, abs=1)
    assert found[0].ratio == pytest.approx(1.05, abs=0.01)
    assert found[1].ratio == pytest.approx(1 / 1.08, abs=0.01)


@pytest.mark.parametrize("sigma", [0.05, 0.01, 0.002])
def test_noise_alone_is_no_change_point(sigma):
    for seed in range(4):
        assert find_changes(series(seed, 1000, sigma, odd=0.02)) == []


def test_one_process_slow_as_a_whole_is_not_a_change():
    values = series(7, 200, 0.003)
    values[90] *= 1.05                          # 16 sigma, once
    assert find_changes(values) == []


def test_a_step_at_the_newest_commit_of_a_steady_kernel_is_found():
    values = series(3, 120, 0.002, [(119, 1.04)])
    [change] = find_changes(values)
    assert change.index == 119 and change.ratio == pytest.approx(1.04, abs=0.005)


def test_recorded_noise_can_only_make_a_change_less_certain():
    values = series(5, 60, 0.002, [(30, 1.03)])
    assert [c.index for c in find_changes(values)] == [30]
    # each point says its median is 10% uncertain (its processes disagreed)
    assert find_changes(values, [0.10] * 60) == []


def test_a_points_noise_comes_from_its_processes_first():
    assert point_noise({"median_us": 10.0, "processes": 4, "process_spread": 0.1}) == \
        pytest.approx(spread_noise([0.1], 4)[0])
    from_samples = point_noise({"median_us": 10.0, "samples_us": [9.0, 10.0, 11.0]})
    assert from_samples == pytest.approx(1.2533 * 1.0 / 3 ** 0.5 / 10, rel=1e-3)
    assert point_noise({"median_us": 10.0, "std_us": 1.0, "samples": 100}) == \
        pytest.approx(1.2533 * 1.0 / 10 / 10, rel=1e-3)
    assert point_noise({"median_us": 10.0}) is None
