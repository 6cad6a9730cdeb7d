"""The search: ask the strategy for configurations, evaluate them, tell the
study, until the budget is spent or every valid point is known.

- Only valid points (those the constraints leave) are ever evaluated. A
  sampler that proposes another one is told it failed (no run, no budget
  spent) and asked again; after MAX_MISSES such answers in a row the search
  takes a random valid point it has not seen instead, so a sampler that
  insists cannot stall it.
- A point already measured for the same GPU model, binary and inputs (in the
  study: this process, an earlier tune, another process) is not measured
  again: its stored evaluation is told to the sampler. A point another
  process is measuring now is left to it.
- `--max-evals` counts configurations known in the study (measured now or
  before), so a resumed tune with the same budget measures nothing; the time
  limit counts this process's wall time and stops further evaluations (the
  first batch always runs).
- The next batch is asked (after the one before the current is told) while
  the current one runs, and its builds start on the CPU cores (prebuild.py)
  while the GPU times the current batch. The
  first batch does not go to the pool: a worker builds its point itself
  while the run's references are made. A point whose build failed in the pool
  is recorded from that build, never run.
- A batch is as wide as the evaluator (one per GPU worker), so several GPUs
  evaluate at once against one storage.
"""
from __future__ import annotations

import datetime
import random
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable

from ..hostdata.threads import on_thread
from .evaluate import Evaluation, Objective
from .space import Point, TuneSpace, key
from .store import measured_with, read_stored, record
from .local import is_local_turn, local_step
from .strategies import CHOOSERS, LEARNS_CONSTRAINTS, LOCAL_STEPS, OWN_ORDER

RANKED_STEPS = True     # bo-local's local step: the neighbour the GP ranks first (local.py)
MAX_MISSES = 10         # proposals in a row that are invalid or known before a random pick
# How long another process takes at most to write an asked trial's parameters.
ASK_WRITE_S = 5.0


@dataclass
class Budget:
    max_evals: int | None = None
    time_limit_s: float | None = None
    started: float = field(default_factory=time.perf_counter)

    def time_left(self) -> bool:
        return self.time_limit_s is None or time.perf_counter() - self.started < self.time_limit_s


def _younger_than(trial, seconds: float) -> bool:
    """Whether a trial started less than `seconds` ago (Optuna's times are local and naive)."""
    started = trial.datetime_start
    return started is not None and (datetime.datetime.now() - started).total_seconds() < seconds


@dataclass
class _Asked:
    trial: object
    point: Point


class Search:
    def __init__(self, space: TuneSpace, study, strategy: str, evaluator, objective: Objective,
                 budget: Budget, inputs_of: Callable[[Point], str], seed: int | None = None,
                 prebuilder=None, report: Callable[[int, Evaluation], None] | None = None,
                 until: Callable[[Evaluation], bool] | None = None):
        self.space, self.study, self.strategy = space, study, strategy
        self.evaluator, self.objective, self.budget = evaluator, objective, budget
        self.inputs_of, self.prebuilder = inputs_of, prebuilder
        self.report = report or (lambda number, evaluation: None)
        self.until = until or (lambda evaluation: False)        # stop after such a one
        self.rng = random.Random(seed)
        # who chose what, kept with each measurement: a later tune with another
        # strategy or seed reuses it and says whose it was
        self.label = strategy if seed is None else f"{strategy} seed {seed}"
        self.order = list(space.valid)
        if strategy == "random":
            self.rng.shuffle(self.order)
        self.distributions = space.distributions()
        self.chooser = None
        if strategy in CHOOSERS:
            from .gaussian import BayesOpt
            self.chooser = BayesOpt(space, objective, seed)
        self.evaluations: list[Evaluation] = []     # this process's, in order
        self.known: dict[str, Evaluation] = {}      # the study's, by point key
        self.claimed: set[str] = set()
        self.invalid_proposals = 0
        self._worst: float | None = None
        self.first_run_at: float | None = None      # perf_counter when the GPU got work

    # -- the loop --

    def run(self) -> list[Evaluation]:
        self._refresh()
        for evaluation in self.known.values():
            self._note_value(evaluation)
        pending = self._next_batch(set())
        if pending:
            self.evaluator.start()          # workers start CUDA while the first builds run
        untold: list[tuple[_Asked, Evaluation]] = []     # measured, not yet told
        first = True
        try:
            while pending:
                current = pending
                planned = {key(a.point) for a in current}
                running = self._evaluate(current)
                if first:       # once the first batch is on its way, not before it
                    self._build_ahead(current)
                    first = False
                try:
                    # While this batch runs, the one before is told and the next one
                    # asked, in that order as before: Optuna's reads and writes (~30 ms
                    # a point through SQLite) would keep the GPU waiting otherwise.
                    self._tell_measured(untold)
                    pending = self._next_batch(planned) if self._room(len(planned)) else []
                    if self.prebuilder is not None and pending:
                        self.prebuilder.submit([a.point for a in pending])
                finally:
                    results = running.result()
                reached = False
                for asked, evaluation in zip(current, results):
                    untold.append((asked, evaluation))
                    self.evaluations.append(evaluation)
                    self.report(len(self.evaluations), evaluation)
                    reached = reached or self.until(evaluation)
                if reached or not self.budget.time_left():
                    break
        finally:
            self._tell_measured(untold)
            self._abandon(pending)
        return self.evaluations

    def _tell_measured(self, untold: list[tuple[_Asked, Evaluation]]) -> None:
        """Tell the measured evaluations in order, each taken off the list first
        (an error part way never tells one twice)."""
        while untold:
            asked, evaluation = untold.pop(0)
            self._tell(asked, evaluation, "measured")

    def _evaluate(self, batch: list[_Asked]) -> Future:
        """The batch's evaluations, in order, being made on a thread (the workers
        run them; this process waits). The first batch goes to the workers
        at once: each builds its own point while the run's references are made
        (the pool never gets it). Later ones wait for their builds,
        and a point whose build failed is recorded from the build (its status
        and reason are the run's) without taking a worker's turn on the GPU."""
        failed: dict[str, Evaluation] = {}
        if self.prebuilder is not None and self.first_run_at is not None:
            for asked, built in zip(batch, self.prebuilder.wait([a.point for a in batch])):
                if built.status != "ok":
                    failed[key(asked.point)] = Evaluation(asked.point, built.status,
                                                          reason=built.reason,
                                                          exit_code=built.exit_code,
                                                          checked=False)
        if self.first_run_at is None:
            self.first_run_at = time.perf_counter()
        to_run = [a.point for a in batch if key(a.point) not in failed]

        def evaluate() -> list[Evaluation]:
            ran = iter(self.evaluator.evaluate(to_run) if to_run else [])
            return [failed.get(key(a.point)) or next(ran) for a in batch]
        return on_thread(evaluate, name="cubinrun-evaluate")

    def _build_ahead(self, first: list[_Asked]) -> None:
        """Brute force and random search know their order: every point the budget
        may reach goes to the build pool now, in that order."""
        if self.prebuilder is None:
            return
        # not the first batch itself: its workers build it (on the critical path,
        # while the run's references are made), and a pool build too would be
        # the same work twice
        if self.strategy in OWN_ORDER:
            taken = {key(a.point) for a in first}
            upcoming = [p for p in self.order if self._free(key(p), taken)]
            if self.budget.max_evals is not None:
                upcoming = upcoming[:max(0, self.budget.max_evals - len(self.known) - len(first))]
            self.prebuilder.submit(upcoming)

    def _room(self, planned: int) -> bool:
        """Whether the budget allows more than `planned` configurations beyond the
        known. The time limit stops further evaluations: the first batch runs
        however short it is, so a tune never ends having measured nothing."""
        started = planned or self.evaluations
        if started and not self.budget.time_left():
            return False
        if self.budget.max_evals is None:
            return True
        return len(self.known) + planned < self.budget.max_evals

    def _next_batch(self, planned: set[str]) -> list[_Asked]:
        self._refresh()
        batch: list[_Asked] = []
        while len(batch) < self.evaluator.width and self._room(len(planned)):
            taken = planned | {key(a.point) for a in batch}
            asked = self._ask(taken)
            if asked is None:
                break
            if self._contested(asked):
                self._abandon([asked])
                continue
            batch.append(asked)
        return batch

    def _contested(self, asked: _Asked) -> bool:
        """Whether another process asked for the same point first (a lower trial
        number, running or already told), between this one's look at the study
        and its ask: then it is theirs. Processes that start together walk the
        same order in step, so without this they would measure every point twice.
        A trial is made before its parameters are written (one commit each), so
        an earlier trial still without them may be the same point: it is read
        again until it has them (a few ms), or until it is too old to be
        another's ask in hand (a process that died there)."""
        from optuna.trial import TrialState
        k, number = key(asked.point), asked.trial.number
        names = set(self.distributions)
        states = (TrialState.RUNNING, TrialState.COMPLETE)
        deadline = time.monotonic() + ASK_WRITE_S
        while True:
            unwritten = False
            for trial in self.study.get_trials(deepcopy=False, states=states):
                if trial.number >= number:
                    continue
                if set(trial.params) != names:
                    unwritten = unwritten or (trial.state == TrialState.RUNNING
                                              and _younger_than(trial, ASK_WRITE_S))
                    continue
                if key(self.space.point(trial.params)) == k and \
                        (trial.state == TrialState.RUNNING or
                         measured_with(trial) == self.inputs_of(asked.point)):
                    self.claimed.add(k)
                    return True
            if not unwritten or time.monotonic() > deadline:
                return False
            time.sleep(0.01)

    # -- asking --

    def _ask(self, taken: set[str]) -> _Asked | None:
        """The next configuration to measure; None when every valid point is known,
        claimed or planned."""
        if not self._unseen(taken):
            return None
        if self.strategy in OWN_ORDER:
            return self._chosen(self._first_unseen(taken))
        if self.strategy in LOCAL_STEPS and is_local_turn(len(self.known) + len(taken)):
            prefer = None
            if self.chooser is not None and RANKED_STEPS:
                prefer = lambda found: self.chooser.most_promising(self.known, found)  # noqa: E731
            step = local_step(self.space, self.known, lambda k: self._free(k, taken),
                              self.objective, self.rng, prefer)
            if step is not None:
                return self._chosen(step)
        if self.chooser is not None:
            return self._chosen(self.chooser.next(self.known, lambda k: self._free(k, taken)))
        misses = 0
        while misses < MAX_MISSES:
            trial = self.study.ask(self.distributions)
            point = self.space.point(trial.params)
            k = key(point)
            if not self.space.is_valid(point):
                self.invalid_proposals += 1
                self._tell_skipped(trial, point)
            elif k in self.known:
                self._tell(_Asked(trial, point), self.known[k], "stored")
            elif k in taken or k in self.claimed:
                self._abandon([_Asked(trial, point)])
            else:
                return _Asked(trial, point)
            misses += 1
        return self._chosen(self._random_unseen(taken))

    def _unseen(self, taken: set[str]) -> bool:
        return any(self._free(key(p), taken) for p in self.order)

    def _free(self, k: str, taken: set[str]) -> bool:
        return k not in self.known and k not in taken and k not in self.claimed

    def _first_unseen(self, taken: set[str]) -> Point:
        return next(p for p in self.order if self._free(key(p), taken))

    def _random_unseen(self, taken: set[str]) -> Point:
        return self.rng.choice([p for p in self.order if self._free(key(p), taken)])

    def _chosen(self, point: Point) -> _Asked:
        """A trial at `point`, steered through the sampler (strategies.steered)."""
        sampler = self.study.sampler
        sampler.forced = self.space.params(point)
        try:
            trial = self.study.ask(self.distributions)
        finally:
            sampler.forced = None
        return _Asked(trial, point)

    # -- telling --

    def _tell(self, asked: _Asked, evaluation: Evaluation, origin: str) -> None:
        if origin == "measured":
            evaluation.by = self.label
        record(asked.trial, asked.point, self.inputs_of(asked.point), evaluation, origin,
               self.strategy in LEARNS_CONSTRAINTS)
        if origin == "measured":
            self.known[key(asked.point)] = evaluation
            self._note_value(evaluation)
        self.study.tell(asked.trial, evaluation.value if evaluation.ok else self._penalty())

    def _tell_skipped(self, trial, point: Point) -> None:
        """A proposal outside the valid points: told as failed, never run."""
        evaluation = Evaluation(point, "skipped", reason="fails a constraint")
        record(trial, point, "", evaluation, "skipped", self.strategy in LEARNS_CONSTRAINTS)
        self.study.tell(trial, self._penalty())

    def _penalty(self) -> float:
        """The value a failed configuration is told: the worst measured (samplers
        that learn constraints also get it as infeasible)."""
        if self._worst is None:
            return 1e30 if self.objective.direction == "minimize" else 0.0
        return self._worst * (2 if self.objective.direction == "minimize" else 0.5)

    def _note_value(self, evaluation: Evaluation) -> None:
        if evaluation.ok and (self._worst is None or
                              self.objective.better(self._worst, evaluation.value)):
            self._worst = evaluation.value

    def _abandon(self, asked: list[_Asked]) -> None:
        """Trials asked but not run (the budget ended): failed, so they claim nothing."""
        from optuna.trial import TrialState
        for a in asked:
            self.study.tell(a.trial, state=TrialState.FAIL)

    def _refresh(self) -> None:
        stored = read_stored(self.study, self.inputs_of, self.space)
        for k, evaluation in stored.done.items():
            self.known.setdefault(k, evaluation)
        self.claimed = stored.claimed - set(self.known)
