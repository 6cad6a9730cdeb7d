"""Change points on synthetic series shaped like H200 noise between fresh
processes (bench/history/history_detection.py measures the rates at scale)."""
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


def suite(seed: int, n: int, levels, own=0.02, shared=0.06, steps=None):
    """Series of one suite (µs) whose every commit is one process: a shift
    that process adds to every kernel (SD `shared` µs, as measured between
    H200 processes) plus each kernel's own noise (SD `own` µs)."""
    rng = np.random.default_rng(seed)
    shift = rng.normal(0, shared, n)
    out = []
    for i, level in enumerate(levels):
        base = np.full(n, level)
        for at, factor in (steps or {}).get(i, []):
            base[at:] *= factor
        out.append(base + shift + rng.normal(0, own, n))
    return out


def by_commit(values):
    return {f"c{i:04d}": float(v) for i, v in enumerate(values)}


LEVELS = [1.3, 5.5, 6.6, 3.6, 3.1, 2.8, 55.8, 86.4]


def test_the_shift_a_process_adds_to_every_kernel_is_taken_off():
    from cubinrun.history.process_shift import corrected
    raw = fixed_found = 0
    for seed in range(10):
        values = suite(seed, 200, LEVELS, steps={0: [(120, 1.05)]})
        # 5% of the 1.3 µs kernel is 1 sigma of its points: placed within a commit
        # about half the time
        raw += any(abs(c.index - 120) <= 1 for c in find_changes(values[0]))
        fixed = corrected([by_commit(v) for v in values])
        assert all(f is not None for f in fixed[:6])      # the small kernels are steadier
        steadier = np.array(list(fixed[0].values()))
        assert np.std(np.diff(steadier)) < 0.5 * np.std(np.diff(values[0]))
        [change] = find_changes(steadier)
        fixed_found += abs(change.index - 120) <= 1
        assert change.ratio == pytest.approx(1.05, abs=0.02)
    assert fixed_found == 10 and raw <= 8


def test_series_of_separate_processes_are_left_as_measured():
    from cubinrun.history.process_shift import corrected
    separate = [suite(seed, 200, [level])[0] for seed, level in enumerate(LEVELS)]
    assert corrected([by_commit(v) for v in separate]) == [None] * len(LEVELS)


def test_one_series_step_is_not_passed_on_to_the_others():
    from cubinrun.history.process_shift import corrected
    values = suite(12, 200, LEVELS, steps={3: [(90, 1.20)], 6: [(150, 1 / 1.10)]})
    fixed = corrected([by_commit(v) for v in values])
    for i, one in enumerate(fixed):
        steps = {3: [90], 6: [150]}.get(i, [])
        found = [c.index for c in find_changes(np.array(list((one or by_commit(values[i]))
                                                              .values())))]
        assert found == pytest.approx(steps, abs=1), i


def test_a_series_never_corrects_itself():
    from cubinrun.history.process_shift import corrected
    two = suite(13, 100, [1.3, 2.8])
    assert corrected([by_commit(v) for v in two]) == [None, None]


def test_a_few_slow_processes_close_together_are_not_a_level():
    rng = np.random.default_rng(14)
    values = 2.8 + rng.normal(0, 0.02, 200)
    values[[93, 95, 96, 97]] += [0.40, 0.35, 0.45, 0.30]    # conv1d's slow processes
    values[150] += 0.4
    assert find_changes(values) == []


def test_history_check_takes_each_commits_shift_off_per_device():
    import datetime
    from cubinrun.history.check import judge_all
    from cubinrun.history.store import Point, Series
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

    def as_series(i, values, device):
        points = [Point(f"c{n:04d}", start + datetime.timedelta(hours=n), float(v), None,
                        None, None, None, False, 1) for n, v in enumerate(values)]
        return Series(f"{device}{i}", f"k{i}.yaml", f"k{i}", {}, device, points)

    found = {"H200": 0, "elsewhere": 0}
    for seed in range(6):
        values = suite(seed, 200, LEVELS, steps={0: [(120, 1.05)]})
        # the same suite, and one kernel on another device whose processes share nothing
        series = [as_series(i, v, "H200") for i, v in enumerate(values)] + \
            [as_series(0, values[0], "elsewhere")]
        verdicts = judge_all(series, series[0].points[120].date, 0.03)
        for verdict in (verdicts[0], verdicts[-1]):
            found[verdict.series.device] += any(abs(int(s.commit[1:]) - 120) <= 1
                                                for s in verdict.regressions)
        assert all(v.steps == [] for v in verdicts[1:-1])
    assert found["H200"] == 6 and found["elsewhere"] <= 5


def test_a_slow_first_process_is_not_a_change():
    values = series(8, 150, 0.003)
    values[0] *= 1.15
    assert find_changes(values) == []


def test_a_series_without_times_neither_takes_nor_gives():
    import warnings
    from cubinrun.history.process_shift import corrected
    values = [by_commit(v) for v in suite(15, 120, LEVELS)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # no all-NaN medians
        fixed = corrected([{}, dict(list(values[0].items())[:2]), *values])
    assert fixed[:2] == [None, None] and all(f is not None for f in fixed[2:8])
    assert fixed[2:] == corrected(values)


def test_one_series_is_judged_with_the_shift_every_series_tells():
    import datetime
    from cubinrun.history.check import judge_all
    from cubinrun.history.store import Point, Series
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    values = suite(3, 200, LEVELS, steps={0: [(120, 1.05)]})
    series = [Series(f"s{i}", f"k{i}.yaml", f"k{i}", {}, "H200",
                     [Point(f"c{n:04d}", start + datetime.timedelta(hours=n), float(v), None,
                            None, None, None, False, 1) for n, v in enumerate(one)])
              for i, one in enumerate(values)]
    since = series[0].points[120].date
    [alone] = judge_all(series, since, 0.03, only=series[:1])      # `history check --match k0`
    assert [s.to_json() for s in alone.steps] == \
        [s.to_json() for s in judge_all(series, since, 0.03)[0].steps]
    assert [int(s.commit[1:]) for s in alone.regressions] == pytest.approx([120], abs=1)
