"""Timing statistics."""
from __future__ import annotations

import math

import pytest

from cubinrun.gpu.stats import Summary


def test_summary_of_known_samples():
    s = Summary.from_samples([3.0, 1.0, 100.0, 2.0, 4.0])
    assert (s.median, s.min, s.max, s.mean, s.samples) == (3.0, 1.0, 100.0, 22.0, 5)
    # sample std: squared deviations 441 + 400 + 361 + 324 + 6084 = 7610, over n - 1 = 4
    assert s.std == pytest.approx(math.sqrt(7610 / 4))
    # inclusive deciles: positions 0.4 and 3.6 between the sorted samples
    assert s.p10 == pytest.approx(1.4) and s.p90 == pytest.approx(61.6)


def test_even_count_median_is_the_middle_mean():
    assert Summary.from_samples([4, 1, 3, 2]).median == 2.5


def test_single_sample():
    s = Summary.from_samples([7.5])
    assert (s.median, s.min, s.max, s.mean, s.std, s.p10, s.p90, s.samples) == \
        (7.5, 7.5, 7.5, 7.5, 0.0, 7.5, 7.5, 1)


@pytest.mark.parametrize("samples", [[], [1.0, float("nan")], [float("inf")], [-1.0]])
def test_bad_samples_are_errors(samples):
    with pytest.raises(ValueError):
        Summary.from_samples(samples)


def test_to_json_keys():
    data = Summary.from_samples([1.0, 2.0, 3.0]).to_json()
    assert data == {"median_us": 2.0, "min_us": 1.0, "max_us": 3.0, "mean_us": 2.0,
                    "std_us": 1.0, "p10_us": pytest.approx(1.2), "p90_us": pytest.approx(2.8),
                    "samples": 3}
    assert isinstance(data["samples"], int)
