"""The last step of a tune: the top K configurations timed again, interleaved
(round robin over several rounds: 1, 2, ..., K, 1, 2, ...), so the winner is
not a lucky sample and a drift of the GPU's clock or temperature touches
every candidate alike. The search checked each of them with the same binary
and inputs, so these runs only time. Each candidate's score is the median of its rounds;
its spread says how much its rounds disagreed.

A re-timing is stored with the study, keyed by the candidates, so a resumed
tune whose top K has not changed measures nothing again.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from .evaluate import Evaluation, Objective
from .space import key

ROUNDS = 3


@dataclass
class Candidate:
    point: dict
    search_value: float                 # what the search measured
    values: list[float]                 # one per round that passed
    failures: list[str]

    @property
    def value(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def spread(self) -> float | None:
        """(max - min) / median of the rounds."""
        if len(self.values) < 2:
            return None
        return relative(max(self.values) - min(self.values), statistics.median(self.values))

    def to_json(self) -> dict:
        return {"point": self.point, "search_value": self.search_value,
                "value": self.value, "rounds": self.values, "spread": self.spread,
                "failures": self.failures}


def top(evaluations: list[Evaluation], objective: Objective, k: int) -> list[Evaluation]:
    ok = [e for e in evaluations if e.ok]
    ok.sort(key=lambda e: e.value, reverse=objective.direction == "maximize")
    return ok[:k]


def retime(best: list[Evaluation], evaluator, objective: Objective,
           rounds: int = ROUNDS) -> list[Candidate]:
    """Each of `best` run `rounds` more times, interleaved; ranked by the median of
    its rounds (a candidate that failed a round keeps its other rounds)."""
    candidates = [Candidate(e.point, e.value, [], []) for e in best]
    order = [c for _ in range(rounds) for c in candidates]
    width = max(1, evaluator.width)
    for start in range(0, len(order), width):
        chunk = order[start:start + width]
        timed = evaluator.evaluate([c.point for c in chunk], timing_only=True)
        for candidate, evaluation in zip(chunk, timed):
            if evaluation.ok:
                candidate.values.append(evaluation.value)
            else:
                candidate.failures.append(evaluation.reason or evaluation.status)
    return rank(candidates, objective)


def rank(candidates: list[Candidate], objective: Objective) -> list[Candidate]:
    timed = [c for c in candidates if c.value is not None]
    timed.sort(key=lambda c: c.value, reverse=objective.direction == "maximize")
    return timed + [c for c in candidates if c.value is None]


def candidates_key(best: list[Evaluation]) -> list[str]:
    return sorted(key(e.point) for e in best)


def from_stored(document: dict, best: list[Evaluation],
                objective: Objective) -> list[Candidate] | None:
    """A stored re-timing of exactly these candidates, or None."""
    if document.get("candidates") != candidates_key(best):
        return None
    return rank([Candidate(**c) for c in document.get("results", [])], objective)


def to_stored(best: list[Evaluation], candidates: list[Candidate]) -> dict:
    return {"candidates": candidates_key(best),
            "results": [{"point": c.point, "search_value": c.search_value,
                         "values": c.values, "failures": c.failures} for c in candidates]}


def gap(candidates: list[Candidate]) -> float | None:
    """How far the first is ahead of the second (a fraction of the second's value)."""
    timed = [c for c in candidates if c.value is not None]
    if len(timed) < 2:
        return None
    return relative(abs(timed[1].value - timed[0].value), timed[1].value)


def span(candidates: list[Candidate]) -> float | None:
    """How far apart the first and the last timed candidate are."""
    timed = [c for c in candidates if c.value is not None]
    if len(timed) < 2:
        return None
    return relative(abs(timed[-1].value - timed[0].value), timed[0].value)


def relative(difference: float, base: float) -> float | None:
    """`difference` as a fraction of `base`; None where that means nothing (a
    base of 0: a timer that read 0 us, an objective of 0 GB/s), unless there
    is no difference at all."""
    if base == 0:
        return 0.0 if difference == 0 else None
    return difference / abs(base)
