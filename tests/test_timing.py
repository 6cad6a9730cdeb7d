"""Pure parts of the timing: the event offset's fit and the sample budget."""
from __future__ import annotations

import pytest

from cubinrun.gpu.timing import (
    MAX_SAMPLES, MIN_SAMPLES, corrected, offset_from_medians, sample_count)


def test_the_offset_is_what_one_pair_reads_beyond_the_per_launch_slope():
    # as measured for the empty kernel on the H200 (bench/results/event_offset.json)
    medians = {1: 3.392, 2: 4.864, 4: 7.360, 8: 12.528, 16: 22.880}
    assert offset_from_medians(medians) == pytest.approx(2.10, abs=0.01)


def test_an_exact_line_gives_its_intercept_at_one_launch():
    medians = {r: 2.0 + 3.0 * r for r in (1, 2, 4, 8, 16)}
    assert offset_from_medians(medians) == pytest.approx(2.0)
    assert offset_from_medians({2: 8.0, 16: 50.0}) == pytest.approx(2.0)   # from R=2: 8 - 2*3


def test_noise_below_zero_means_nothing_to_subtract():
    assert offset_from_medians({1: 1.0, 2: 2.2, 4: 4.6}) == 0.0


def test_one_launch_count_is_not_enough():
    with pytest.raises(ValueError, match="at least two"):
        offset_from_medians({1: 3.0})


@pytest.mark.parametrize("budget, estimate, expected", [
    (100.0, 0.01, MAX_SAMPLES),        # a tiny kernel stops at the cap
    (100.0, 50.0, MIN_SAMPLES),        # a long one still gets the minimum
    (100.0, 1.0, 100),
    (100.0, 0.0, MAX_SAMPLES),         # too fast to measure: the cap
])
def test_sample_count_follows_the_budget_within_bounds(budget, estimate, expected):
    assert sample_count(budget, estimate) == expected


def test_pairs_no_longer_than_the_offset_are_dropped_and_counted():
    kept, dropped = corrected([6.5, 2.0, 6.7, 2.1, 6.6], offset=2.1)
    assert kept == pytest.approx([4.4, 4.6, 4.5]) and dropped == 2
    assert min(kept) > 0                    # a glitch never poses as the kernel's minimum


def test_raw_pairs_keep_every_sample_and_all_too_short_are_kept_at_zero():
    assert corrected([1.0, 2.0], offset=0.0) == ([1.0, 2.0], 0)
    assert corrected([1.0, 2.0], offset=3.0) == ([0.0, 0.0], 0)
