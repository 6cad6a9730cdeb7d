"""Is a run slower than its baseline, or is it noise?

Runs are matched by spec, kernel and point (by the spec's file name when the
paths differ, e.g. another checkout, as long as that is unambiguous). Each
match gets a verdict, the ratio new / baseline of the medians and a 95%
interval of that ratio:

- With timing samples on both sides (`--samples`): the two-sided
  Mann-Whitney U test (SciPy; google/benchmark's choice) says whether the
  two distributions differ, and a percentile bootstrap of the ratio of
  medians (SciPy) gives the interval.
- With summaries only: the 95% interval of each median from its normal
  approximation (median ± 1.96 x 1.2533 std / sqrt(n)); the difference is
  significant when the two intervals do not overlap, and the ratio's interval
  is the ratio of their ends.
- With process medians on both sides (`launch --processes N`): between
  processes, as process_noise.py says; a side with one process has its
  interval widened by what two processes differ by, so a shift between
  processes is never a verdict.

Then, with t the threshold (3% by default):
- SLOWER: significant and the ratio above 1 + t;
- FASTER: significant and the ratio below 1 / (1 + t);
- SAME: the whole interval within [1 / (1 + t), 1 + t]: any change is smaller
  than the threshold;
- AMBIGUOUS: anything else (too noisy to say: rerun with more samples), and
  whenever the SM clock measured during the two runs differs by more than t
  (a throttled or boosted GPU, not the kernel).

Energy is a second metric: when both runs measured it (`--energy`), the ratio
of their joules per launch and an energy verdict (SAME within the threshold,
else MORE or LESS; one reading per run, so no test of significance). It is
reported, not gated: only SLOWER fails a comparison.

SciPy is imported only here, so only `compare` and `launch --baseline` pay
for it.
"""
from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import EXIT_BUILD, EXIT_CHECK_FAILED, EXIT_CUDA, EXIT_USAGE, UsageError
from ..text import parse_fraction
from .process_noise import (RECOMMENDED_PROCESSES, between_processes,
                            one_process_allowance_us, process_medians, shift_floor_us, widened)
from .reader import refuse_twice, reread, run_key, spec_of_key

DEFAULT_THRESHOLD = 0.03
ALPHA = 0.05                 # significance level of the U test
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 1000
MIN_SAMPLES = 5              # fewer: no test (AMBIGUOUS)
Z95 = 1.959964
MEDIAN_SE = 1.2533           # sqrt(pi / 2): the median's standard error over the mean's

VERDICTS = ("SAME", "FASTER", "SLOWER", "AMBIGUOUS")


@dataclass
class Comparison:
    spec: str | None
    kernel: str | None
    point: dict
    verdict: str                         # SAME FASTER SLOWER AMBIGUOUS, or NEW / MISSING / NO TIMING
    ratio: float | None = None           # new median / baseline median
    low: float | None = None             # 95% interval of the ratio
    high: float | None = None
    p_value: float | None = None         # Mann-Whitney U with samples; the bootstrap's between processes
    method: str | None = None            # "processes", "mann-whitney" or "intervals"
    processes: list | None = None        # [baseline, new]: how many processes each side's samples came from
    allowance_us: float | None = None    # what the two sides may differ by between processes
    spread: list | None = None           # [baseline, new]: each side's process_spread, when gathered
    baseline_us: float | None = None
    new_us: float | None = None
    reason: str = ""
    new_failed: bool = False             # the new run has no timing or failed (--strict counts it)
    baseline_j: float | None = None      # energy.j_per_launch, when both sides have it
    new_j: float | None = None
    energy_ratio: float | None = None
    energy_verdict: str | None = None    # SAME, MORE or LESS

    def to_json(self) -> dict:
        return dict(vars(self))         # dataclasses.asdict deep-copies: 5x slower


def parse_threshold(text: str | float) -> float:
    """`3%` or `0.03`."""
    return parse_fraction(text, "--threshold")


class Baseline:
    """Baseline results, indexed for matching new ones as they come.

    `results` may be a stream (reader.iter_results): each result read from
    JSON lines is held as its line's bytes and parsed again when matched, so
    a million-run baseline holds about its file's size plus one key per run
    (at most MAX_INDEXED_RESULTS); a run twice (spec, kernel, point and
    device) is refused as it is indexed. `source` names the file in errors.

    The lines are held end to end in one buffer, each found by where it ends
    (a bytes object a line would cost 33 bytes more and a list's slot: a
    fifth of the file again)."""

    def __init__(self, results: Iterable[dict], threshold: float = DEFAULT_THRESHOLD,
                 ignore_device: bool = False, source: str | Path | None = None):
        from ..limits import MAX_INDEXED_RESULTS
        self.threshold, self.ignore_device, self.source = threshold, ignore_device, source
        self._lines = bytearray()               # the JSON lines held, end to end
        self._ends = array("Q")                 # where each result's line ends in _lines
        self._numbers = array("l")              # each result's line; 0: held parsed, in
        self._parsed: dict[int, dict] = {}      # _parsed (read from one JSON document)
        self.exact: dict[str, int] = {}         # run_key -> index of its first result
        self._devices: dict[str, dict] = {}     # a run_key seen twice -> {device: index}
        self._by_name: dict[str, int] | None = None     # made at the first miss
        for result in results:
            if len(self._numbers) == MAX_INDEXED_RESULTS:
                raise UsageError(f"{getattr(result, 'where', source)}: more than "
                                 f"{MAX_INDEXED_RESULTS} baseline runs, the most indexed: "
                                 "split the files")
            index = len(self._numbers)
            raw = getattr(result, "raw", None)
            number = getattr(result, "number", 0) if raw is not None else 0
            if number:
                self._lines += raw
                self._numbers.append(number)
            else:
                self._parsed[index] = result
                self._numbers.append(0)
            self._ends.append(len(self._lines))
            self._index(run_key(result), index, result)
        self._matched = bytearray(len(self._numbers))

    def _index(self, key: str, index: int, result: dict) -> None:
        first = self.exact.setdefault(key, index)
        if first == index:
            return
        devices = self._devices.setdefault(key, {_device(self._result(first)): first})
        device = _device(result)
        if device in devices:
            refuse_twice(self.source, result, getattr(self._result(devices[device]),
                                                      "place", "?"))
        devices[device] = index

    def _result(self, index: int) -> dict:
        number = self._numbers[index]
        if not number:
            return self._parsed[index]
        start = self._ends[index - 1] if index else 0
        return reread(self.source, number, bytes(self._lines[start:self._ends[index]]))

    def _names(self) -> dict[str, int]:
        """The runs by their spec's file name, where that names one run."""
        if self._by_name is None:
            counts: dict[str, list] = {}
            names: dict[str, str] = {}          # a spec's part of a key -> its name's
            for key, index in self.exact.items():
                spec, rest = key.split("\0", 1)
                if spec not in names:
                    names[spec] = repr(_name(spec_of_key(key)[0]))
                entry = counts.setdefault(f"{names[spec]}\0{rest}", [0, index])
                entry[0] += 2 if key in self._devices else 1
            self._by_name = {k: index for k, (n, index) in counts.items() if n == 1}
        return self._by_name

    def match(self, result: dict) -> dict | None:
        found = self.exact.get(getattr(result, "key", None) or run_key(result))
        if found is None:
            found = self._names().get(run_key(result, _name(result.get("spec"))))
        if found is None:
            return None
        self._matched[found] = 1
        return self._result(found)

    def compare(self, result: dict) -> Comparison:
        base = self.match(result)
        if base is None:
            out = Comparison(result.get("spec"), result.get("kernel"), result.get("point", {}),
                             "NEW", reason="no baseline run with this spec, kernel and point")
        else:
            self._check_device(base, result)
            out = compare_pair(base, result, self.threshold)
        out.new_failed = failed(result, base)
        return out

    def missing(self) -> Iterator[Comparison]:
        for index, matched in enumerate(self._matched):
            if not matched:
                r = self._result(index)
                yield Comparison(r.get("spec"), r.get("kernel"), r.get("point", {}), "MISSING",
                                 reason="in the baseline only")

    def _check_device(self, base: dict, new: dict) -> None:
        a, b = ((r.get("device") or {}).get("name") for r in (base, new))
        if a and b and a != b and not self.ignore_device:
            raise UsageError(f"the baseline ran on {a} and the new results on {b}: timings of "
                             "different GPU models do not compare (--ignore-device to compare "
                             "anyway)")


def _device(result: dict):
    return (result.get("device") or {}).get("name")


def failed(result: dict, base: dict | None = None) -> bool:
    """A run that failed (its check, an error) or lost the timing its baseline
    run `base` had. Untimed is no failure where nothing was timed: a point its
    sweep skips (a constraint, `sweep_invalid: skip`) was never meant to run, a
    dry run times nothing, and a run untimed on both sides lost nothing."""
    if result.get("exit_code") in (EXIT_CHECK_FAILED, EXIT_USAGE, EXIT_BUILD, EXIT_CUDA):
        return True
    if _timed(result) or result.get("status") in _UNTIMED_STATUSES:
        return False
    return base is None or _timed(base)


_UNTIMED_STATUSES = ("skipped", "invalid", "dry-run")


def _timed(result: dict) -> bool:
    return (result.get("timing") or {}).get("median_us") is not None


def strict_failures(comparisons: list[Comparison]) -> list[Comparison]:
    """What `compare --strict` counts as failures besides SLOWER: a run MISSING
    from the new side, or one that failed there."""
    return [c for c in comparisons if strict_failure(c)]


def strict_failure(c: Comparison) -> bool:
    return c.verdict == "MISSING" or c.new_failed


def compare_results(baseline: Iterable[dict], new: Iterable[dict],
                    threshold: float = DEFAULT_THRESHOLD, ignore_device: bool = False,
                    source: str | Path | None = None) -> Iterator[Comparison]:
    """Each new result's comparison as it comes, then the baseline's runs no
    new result matched (MISSING)."""
    index = Baseline(baseline, threshold, ignore_device, source)
    for result in new:
        yield index.compare(result)
    yield from index.missing()


def _name(spec: str | None) -> str | None:
    return Path(spec).name if spec else None


def compare_pair(base: dict, new: dict, threshold: float = DEFAULT_THRESHOLD) -> Comparison:
    out = Comparison(new.get("spec"), new.get("kernel"), new.get("point", {}), "NO TIMING")
    compare_energy(base, new, out, threshold)
    bt, nt = base.get("timing"), new.get("timing")
    if not bt or not nt or not bt.get("median_us") or nt.get("median_us") is None:
        out.reason = "a run without timing on " + ("neither side" if bt and nt else
                                                   "the baseline side" if not bt else "the new side")
        return out
    out.baseline_us, out.new_us = bt["median_us"], nt["median_us"]
    out.ratio = out.new_us / out.baseline_us
    out.processes = [bt.get("processes") or 1, nt.get("processes") or 1]
    out.spread = [bt.get("process_spread"), nt.get("process_spread")]
    base_medians, new_medians = process_medians(bt), process_medians(nt)
    bs, ns = bt.get("samples_us"), nt.get("samples_us")
    if base_medians and new_medians:
        significant = _from_processes(base_medians, new_medians, out)
    else:
        if bs and ns and len(bs) >= MIN_SAMPLES and len(ns) >= MIN_SAMPLES:
            significant = _from_samples(bs, ns, out)
        else:
            significant = _from_summaries(bt, nt, out)
        significant = _one_process_each(out, significant)
    out.verdict = decide(out.ratio, out.low, out.high, significant, threshold)
    if out.verdict != "AMBIGUOUS":
        out.reason = ""
    clock = clock_change(bt, nt)
    if clock is not None and abs(clock - 1) > threshold:
        out.verdict = "AMBIGUOUS"
        out.reason = (f"the SM clock moved {bt['sm_clock_mhz']:.0f} -> {nt['sm_clock_mhz']:.0f} "
                      f"MHz ({100 * (clock - 1):+.1f}%), beyond the threshold")
    elif out.verdict == "AMBIGUOUS" and not out.reason:
        out.reason = _ambiguous_reason(out)
    return out


def _ambiguous_reason(out: Comparison) -> str:
    if out.method == "processes":
        return "too noisy to tell between processes: more --processes, or a longer --rep"
    return ("too noisy to tell with one process a side: record both with --processes "
            f"{RECOMMENDED_PROCESSES}"
            + ("" if out.method == "mann-whitney" else ", or keep --samples for a rank test"))


def _from_processes(base_medians: list[float], new_medians: list[float],
                    out: Comparison) -> bool:
    """Between processes (process_noise.py): the interval at least the machine's floor."""
    import statistics
    out.method = "processes"
    out.baseline_us, out.new_us = statistics.median(base_medians), statistics.median(new_medians)
    out.ratio, low, high, out.p_value = between_processes(base_medians, new_medians)
    out.allowance_us = shift_floor_us(out.baseline_us)
    out.low, out.high = widened(out.ratio, low, high, out.allowance_us / out.baseline_us)
    return out.low > 1 or out.high < 1


def _one_process_each(out: Comparison, significant: bool) -> bool:
    """A side with one process: the interval widened by what two processes
    differ by, and a difference within it not significant."""
    out.allowance_us = one_process_allowance_us(out.baseline_us)
    out.low, out.high = widened(out.ratio, out.low, out.high, out.allowance_us / out.baseline_us)
    beyond = out.low > 1 or out.high < 1
    if significant and not beyond:
        out.reason = (f"within what two processes differ by (±{out.allowance_us:.2f} us) and "
                      f"only one process a side: record both sides with --processes "
                      f"{RECOMMENDED_PROCESSES} for a verdict")
    return significant and beyond


def compare_energy(base: dict, new: dict, out: Comparison, threshold: float) -> None:
    a, b = ((r.get("energy") or {}).get("j_per_launch") for r in (base, new))
    if not a or b is None:
        return
    out.baseline_j, out.new_j, out.energy_ratio = a, b, b / a
    out.energy_verdict = ("MORE" if out.energy_ratio > 1 + threshold else
                          "LESS" if out.energy_ratio < 1 / (1 + threshold) else "SAME")


def decide(ratio: float, low: float | None, high: float | None, significant: bool,
           threshold: float) -> str:
    upper, lower = 1 + threshold, 1 / (1 + threshold)
    if significant and ratio > upper:
        return "SLOWER"
    if significant and ratio < lower:
        return "FASTER"
    if low is not None and high is not None and lower <= low and high <= upper:
        return "SAME"
    return "AMBIGUOUS"


def clock_change(bt: dict, nt: dict) -> float | None:
    a, b = bt.get("sm_clock_mhz"), nt.get("sm_clock_mhz")
    return b / a if a and b else None


def _median_ratio(new, base, axis=-1):
    import numpy as np
    return np.median(new, axis=axis) / np.median(base, axis=axis)


def _from_samples(base_samples, new_samples, out: Comparison) -> bool:
    import numpy as np
    from scipy import stats
    base = np.asarray(base_samples, dtype=np.float64)
    new = np.asarray(new_samples, dtype=np.float64)
    if not (np.median(base) > 0 and np.median(new) > 0):
        return False                    # nothing measured: no ratio to test (AMBIGUOUS)
    out.method = "mann-whitney"
    out.ratio = float(np.median(new) / np.median(base))
    out.p_value = float(stats.mannwhitneyu(new, base, alternative="two-sided").pvalue)
    batch = max(1, 2_000_000 // (len(base) + len(new)))      # bounds the bootstrap's memory
    interval = stats.bootstrap((new, base), _median_ratio, n_resamples=BOOTSTRAP_RESAMPLES,
                               confidence_level=CONFIDENCE, method="percentile",
                               vectorized=True, paired=False, batch=batch,
                               rng=np.random.default_rng(0)).confidence_interval
    out.low, out.high = float(interval.low), float(interval.high)
    return out.p_value < ALPHA


def _from_summaries(bt: dict, nt: dict, out: Comparison) -> bool:
    out.method = "intervals"
    (b_lo, b_hi), (n_lo, n_hi) = _median_interval(bt), _median_interval(nt)
    out.low = n_lo / b_hi if b_hi > 0 else None
    out.high = n_hi / b_lo if b_lo > 0 else math.inf
    return n_lo > b_hi or n_hi < b_lo


def _median_interval(timing: dict) -> tuple[float, float]:
    n = timing.get("samples") or 1
    half = Z95 * MEDIAN_SE * (timing.get("std_us") or 0.0) / math.sqrt(n)
    return timing["median_us"] - half, timing["median_us"] + half
