"""Racing's decisions (cubinrun/tune/racing.py), pure functions over sample
lists: a configuration stops being sampled only when compare's noise model
says it is SLOWER than the best so far, never on too few samples, never when
the two are within the threshold or the noise hides the difference."""
from __future__ import annotations

import random

import pytest

from cubinrun.results.compare import MIN_SAMPLES, compare_pair
from cubinrun.tune.racing import clearly_slower, median_interval, race_rule, verdict


def noisy(median: float, relative: float, n: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [median * (1 + rng.gauss(0, relative)) for _ in range(n)]


def test_a_configuration_twice_as_slow_stops_after_the_first_samples():
    best = noisy(100.0, 0.01, 20)
    assert clearly_slower(noisy(200.0, 0.01, MIN_SAMPLES, seed=1), best)
    assert verdict(noisy(200.0, 0.01, MIN_SAMPLES, seed=1), best) == "SLOWER"


def test_never_on_fewer_samples_than_compare_tests():
    best = noisy(100.0, 0.01, 20)
    assert not clearly_slower(noisy(200.0, 0.01, MIN_SAMPLES - 1, seed=1), best)
    # nor against a best that itself has too few
    assert not clearly_slower(noisy(200.0, 0.01, 10, seed=1), best[:MIN_SAMPLES - 1])
    assert not clearly_slower(noisy(200.0, 0.01, 10, seed=1), None)


def test_within_the_threshold_it_keeps_sampling_however_steady():
    # 2% slower, both very steady: significant, but below compare's 3% threshold
    best = noisy(100.0, 0.0005, 30)
    close = noisy(102.0, 0.0005, 30, seed=2)
    assert verdict(close, best) == "SAME"            # the whole interval within 3%
    assert not clearly_slower(close, best)
    # the same 2% against a 1% threshold is clearly slower
    assert clearly_slower(close, best, threshold=0.01)


def test_noise_that_hides_the_difference_keeps_sampling():
    # 10% slower on its median, but 30% noise on 5 samples: the intervals overlap
    best = noisy(100.0, 0.3, MIN_SAMPLES, seed=3)
    slow = noisy(110.0, 0.3, MIN_SAMPLES, seed=4)
    low, _, high = median_interval(slow)
    b_low, _, b_high = median_interval(best)
    assert low < b_high             # overlapping: not significant
    assert not clearly_slower(slow, best)


def test_a_faster_configuration_is_never_raced_out():
    best = noisy(100.0, 0.01, 20)
    faster = noisy(50.0, 0.01, 20, seed=5)
    assert verdict(faster, best) == "FASTER" and not clearly_slower(faster, best)


def test_the_verdict_is_compares_on_the_same_summaries():
    best, new = noisy(100.0, 0.02, 12, seed=6), noisy(120.0, 0.02, 12, seed=7)

    def summary(samples):
        import statistics
        return {"median_us": statistics.median(samples), "std_us": statistics.stdev(samples),
                "samples": len(samples)}
    # compare given summaries only (no samples_us) uses the same interval model; its
    # one-process allowance widens the interval, so where racing says SLOWER on a
    # 20% loss, compare does too
    pair = compare_pair({"timing": summary(best)}, {"timing": summary(new)})
    assert verdict(new, best) == pair.verdict == "SLOWER"


def test_the_rule_has_the_timing_loops_shape():
    assert race_rule(None) is None and race_rule([1.0, 2.0]) is None
    best = noisy(100.0, 0.01, 20)
    enough = race_rule(best)
    assert enough(noisy(300.0, 0.01, MIN_SAMPLES, seed=8)) is True
    assert enough(noisy(100.5, 0.01, 40, seed=9)) is False
    best.append(1e9)                # the rule keeps its own copy of the best's samples
    assert enough(noisy(300.0, 0.01, MIN_SAMPLES, seed=8)) is True


@pytest.mark.parametrize("seed", range(20))
def test_equal_configurations_are_not_raced_out(seed):
    """Two configurations of the same speed, 3% noise, 5 to 40 samples each:
    never SLOWER (a wrong stop would drop a contender)."""
    rng = random.Random(seed)
    best = noisy(100.0, 0.03, rng.randint(MIN_SAMPLES, 40), seed=seed)
    same = noisy(100.0, 0.03, rng.randint(MIN_SAMPLES, 40), seed=seed + 100)
    assert not clearly_slower(same, best)
