"""The local steps of `tpe-local` and `bo-local`: every other configuration
is an unseen neighbour of one of the best so far, the rest are TPE's (or the
Gaussian process's, gaussian.py).

TPE models the whole space and finds the good region within a few dozen
evaluations, but near the best it keeps sampling around it rather than
trying each way out of it; a greedy local step does exactly that, as Kernel
Tuner's greedy iterated local search and multi-start local search do. A
neighbour is a point with one axis set to another of its values (the
Hamming neighbourhood: on a measured landscape the good values of an axis
such as a block count are often not next to each other, so a step of one
index would miss them), drawn uniformly: an axis with more values gets more
of the steps (drawing the axis first found the reduction's needle as often
but the rugged landscape's best for fewer seeds). The steps are told to TPE
like its own proposals, so each half learns from the other.

The step is taken from the best point while it keeps improving. Once the
best has not improved for STALL evaluations, the base moves to the second
best, then the third, and back (the top TOP_K, in turn, STALL evaluations
each): on a rugged landscape the best found early is often a local optimum
whose own neighbourhood (29 points in the reduction's space) is too large to
exhaust within the budget, while the best points sit one step from a
runner-up (a block size doubled is one step, halving the block count to
keep one full wave another). This is iterated local search's restart, made
cheap: a runner-up is already measured, so moving there costs nothing. A
base whose neighbours are all known passes the step to the next one; when
all TOP_K are exhausted the model proposes.

Which neighbour: `tpe-local` draws one at random; `bo-local` takes the one
its Gaussian process ranks first (the highest expected improvement among the
neighbours: a trust region around the base, as TuRBO confines BO to one).
On the real landscapes of bench/tune/landscapes/ (docs/tune.md) this lowered the
mean excess after 60 evaluations on each landscape it was tried on (20
seeds: the A100 convolution's 32.8% to 27.6%, the RTX 3090 convolution's
1.10% to 0.66%, pnpoly's 1.20% to 0.47%).

Replayed on five landscapes of different shapes (docs/tune.md), this came
within 1% of the best in 60 evaluations for more seeds than TPE, CMA-ES,
random search or the local search alone. Over 100 seeds, moving the base
(TOP_K 4, STALL 6) raised the rugged landscapes' shares (waves 74 -> 88,
stride 51 -> 60) and left the others within the noise (reduction 96 -> 94,
matmul and convolution 100); TOP_K 2 or 3 gained less (waves 78, 81), and
STALL 4 the same as 6. Tried and not kept: the neighbours of the top K
drawn together or weighted by rank (no gain), TPE with 5 or 20 start-up
trials, 100 candidates, its endpoints, or independent axes, and a local
step every third configuration or from the 20th (all within the noise).
"""
from __future__ import annotations

import random

from .evaluate import Evaluation, Objective
from .space import Point, TuneSpace, key

LOCAL_FROM = 10         # the first steps are TPE's start-up (a space-filling random sample)
EVERY = 2               # then every EVERY-th configuration is a local step
TOP_K = 4               # the bases a stalled search moves between: the best, the next ...
STALL = 6               # ... each for this many evaluations without a new best


def is_local_turn(count: int) -> bool:
    """Whether the configuration numbered `count` (0-based, of the study's known
    and planned ones) is a local step."""
    return count >= LOCAL_FROM and count % EVERY == 0


def local_step(space: TuneSpace, known: dict[str, Evaluation], free, objective: Objective,
               rng: random.Random, prefer=None) -> Point | None:
    """An unseen valid neighbour (`free(key)` says unseen) of the base: the best
    passing configuration known, or, once the best has stalled, the next of the
    top TOP_K in turn (bases); None when none of them has one (the model then
    proposes). Which neighbour: `prefer(neighbours)` chooses one (`bo-local`:
    the model's most promising), or without it one drawn at random."""
    top = ranked(known, objective)[:TOP_K]
    if not top:
        return None
    turn = stalled(known, objective) // STALL % len(top)
    for base in top[turn:] + top[:turn]:
        found = neighbours(space, base.point, free)
        if found:
            chosen = prefer(found) if prefer is not None else None
            return chosen if chosen is not None else rng.choice(found)
    return None


def neighbours(space: TuneSpace, point: Point, free) -> list[Point]:
    """The valid points with one axis of `point` set to another of its values
    that `free(key)` accepts."""
    out = []
    for axis in space.axes:
        for value in axis.values:
            neighbour = {**point, axis.name: value}
            if value != point[axis.name] and space.is_valid(neighbour) and free(key(neighbour)):
                out.append(neighbour)
    return out


def ranked(known: dict[str, Evaluation], objective: Objective) -> list[Evaluation]:
    """The passing evaluations, the best first."""
    passing = [e for e in known.values() if e.ok]
    return sorted(passing, key=lambda e: e.value, reverse=objective.direction == "maximize")


def stalled(known: dict[str, Evaluation], objective: Objective) -> int:
    """How many evaluations (in the order they became known) came after the
    last one that improved on the best before it."""
    best, since = None, 0
    for evaluation in known.values():
        since += 1
        if evaluation.ok and (best is None or objective.better(evaluation.value, best)):
            best, since = evaluation.value, 0
    return since
