"""Bayesian optimisation over the enumerated space (`--strategy bo`).

A Gaussian process models the log of the objective over the valid points;
each configuration proposed is the unmeasured valid point with the highest
expected improvement on the best so far. The space is small and enumerated
(space.valid: a few hundred to a few thousand points), so every candidate is
scored, as in Kernel Tuner's Bayesian optimisation (Willemsen, van
Nieuwpoort and van Werkhoven, 2021), which found this the best strategy at
small budgets.

- The first INITIAL configurations are random valid points.
- A point is a row of features in [0, 1]: for a numeric axis of positive
  values, log2 of its value scaled to the axis's range (block sizes, counts
  and tiles act by ratios; the values' positions instead came within 1% for
  fewer seeds on the rugged landscapes: waves 16 and stride 15 of 20, against
  19 and 20), otherwise its position among the axis's values.
- The kernel is a Matern 5/2 with a length scale an axis (ARD), a signal and
  a noise variance, fitted by maximising the log marginal likelihood
  (L-BFGS-B with its gradient, from the last fit's values and one random
  start; without the random start, fewer seeds on `reduction`, 17 of 20).
- A failed configuration is told as the worst value measured, so the model
  learns to keep away from where they fail (leaving them out: the same
  within the noise, one seed fewer on `convolution`).
- A known point is never proposed again; a seed makes the choices
  reproducible.

The default, `bo-local`, takes every other configuration from the 11th on
as a local step instead (local.py, as `tpe-local` does): of the unseen
neighbours of the best so far, the one this model ranks first
(`most_promising`), a trust region around the best. Replayed over 200
seeds (docs/tune.md), it came within 1% of the best in 60 evaluations for
as many seeds as `tpe-local` within the noise (matmul 198 of 200 against
200) and for more on the rugged landscapes (waves 179 against 164, stride
194 against 114); over the first 100, for about as many as `bo` (waves 89
against 86, matmul 100 against 98, stride 98 against 99), while half its
proposals cost no fit. A proposal fits the GP afresh: about 13 ms on
average, 22 ms from 50 known points on, over 792 candidates (one CPU core),
while the current configuration is timed (search.py asks for the next one
meanwhile). Past FIT_UNTIL known points the fit stops growing (_model):
running through all 792 points of the reduction with no --max-evals, replayed,
took 12 s for `bo-local` against 52 s for `tpe-local`.
"""
from __future__ import annotations

import math
import random

import numpy as np

from .evaluate import Evaluation, Objective
from .space import Point, TuneSpace, key

INITIAL = 10            # random valid points before the model proposes
RESTARTS = 1            # random starts of each fit besides the last fit's hyperparameters
FIT_UNTIL = 100         # hyperparameters fitted at each proposal up to this many points known
REFRESH = 25            # then the model conditioned afresh every max(REFRESH, n/4) new points
MAX_TRAIN = 1000        # the most points the GP is conditioned on: the best ones
CHUNK = 4096            # candidates scored at a time (a 100 000-point space, 1000 known: 16 MB)
LENGTH = (-3.0, 3.0)    # bounds of a log length scale (features in [0, 1])
SIGNAL = (-3.0, 3.0)    # of the log signal variance (targets standardised)
NOISE = (-12.0, -1.0)   # of the log noise variance
SQRT5 = math.sqrt(5.0)


def features(space: TuneSpace, points: list[Point]) -> np.ndarray:
    """Each point as a row in [0, 1]^axes: a numeric axis of positive values as
    log2 of the value, another as the value's position among the axis's
    values, each scaled to [0, 1]."""
    columns = []
    for axis in space.axes:
        ordered = space.ordered(axis)
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ordered)
        if numeric and all(v > 0 for v in ordered):
            scale = {v: math.log2(v) for v in ordered}
        else:
            scale = {v: float(i) for i, v in enumerate(ordered)}
        low, high = min(scale.values()), max(scale.values())
        span = (high - low) or 1.0
        columns.append([(scale[p[axis.name]] - low) / span for p in points])
    return np.array(columns, dtype=float).T


def matern(a: np.ndarray, b: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The Matern 5/2 correlation of each row of `a` with each of `b` (an axis
    at a time: a large space's candidates make no array of len(a) x len(b) x
    axes)."""
    r2 = np.zeros((len(a), len(b)))
    for k, length in enumerate(lengths):
        r2 += ((a[:, k, None] - b[None, :, k]) / length) ** 2
    return _correlation(np.sqrt(r2))


def _correlation(r: np.ndarray) -> np.ndarray:
    return (1 + SQRT5 * r + 5.0 / 3.0 * r * r) * np.exp(-SQRT5 * r)


def scaled_squares(x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The squared distances between the rows of `x`, an axis at a time, each
    scaled by its length: (axes, len(x), len(x))."""
    return np.moveaxis(((x[:, None, :] - x[None, :, :]) / lengths) ** 2, 2, 0)


class GaussianProcess:
    """A GP on standardised targets (a constant mean); its hyperparameters
    theta (log length scales, log signal variance, log noise variance)
    maximise the log marginal likelihood from `start` and RESTARTS random
    starts drawn from `rng`, or are `start` as given when not `fit`."""

    def __init__(self, x: np.ndarray, y: np.ndarray, rng: np.random.Generator,
                 start: np.ndarray | None = None, fit: bool = True):
        self.x = x
        self.mean, self.std = float(y.mean()), float(y.std()) or 1.0
        self.y = (y - self.mean) / self.std
        self.theta = self._fit(rng, start) if fit or start is None else start
        lengths, signal, noise = self._unpack(self.theta)
        corr = matern(x, x, lengths)
        self.chol = np.linalg.cholesky(signal * corr + (noise + 1e-9) * np.eye(len(y)))
        self.alpha = _solve(self.chol, self.y)

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The mean and standard deviation at each row of `x`, in the targets'
        units (CHUNK rows at a time, so memory stays CHUNK x known points)."""
        from scipy.linalg import solve_triangular
        lengths, signal, _ = self._unpack(self.theta)
        means, sds = [], []
        for start in range(0, len(x), CHUNK):
            cross = signal * matern(x[start:start + CHUNK], self.x, lengths)
            v = solve_triangular(self.chol, cross.T, lower=True)
            variance = np.maximum(signal - (v * v).sum(axis=0), 1e-12)
            means.append(cross @ self.alpha * self.std + self.mean)
            sds.append(np.sqrt(variance) * self.std)
        return (np.concatenate(means), np.concatenate(sds)) if means else (np.empty(0),) * 2

    def _unpack(self, theta: np.ndarray) -> tuple[np.ndarray, float, float]:
        d = self.x.shape[1]
        return np.exp(theta[:d]), math.exp(theta[d]), math.exp(theta[d + 1])

    def _nll(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The negative log marginal likelihood and its gradient in theta."""
        lengths, signal, noise = self._unpack(theta)
        n = len(self.y)
        squared = scaled_squares(self.x, lengths)
        r = np.sqrt(squared.sum(axis=0))
        corr = _correlation(r)
        try:
            chol = np.linalg.cholesky(signal * corr + (noise + 1e-9) * np.eye(n))
        except np.linalg.LinAlgError:
            return 1e10, np.zeros_like(theta)
        alpha = _solve(chol, self.y)
        nll = 0.5 * self.y @ alpha + np.log(np.diag(chol)).sum() + 0.5 * n * math.log(2 * math.pi)
        # d nll / d theta_j = -1/2 tr((alpha alpha^T - K^-1) dK / d theta_j)
        outer = np.outer(alpha, alpha) - _solve(chol, np.eye(n))
        # d corr / d log length_k = 5/3 (1 + sqrt5 r) exp(-sqrt5 r) squared_k
        common = signal * 5.0 / 3.0 * (1 + SQRT5 * r) * np.exp(-SQRT5 * r)
        grad = [-0.5 * np.sum(outer * common * s) for s in squared]
        grad.append(-0.5 * np.sum(outer * signal * corr))
        grad.append(-0.5 * noise * np.trace(outer))
        return float(nll), np.array(grad)

    def _fit(self, rng: np.random.Generator, start: np.ndarray | None) -> np.ndarray:
        from scipy.optimize import minimize
        bounds = [LENGTH] * self.x.shape[1] + [SIGNAL, NOISE]
        first = start if start is not None else \
            np.array([math.log(0.5)] * self.x.shape[1] + [0.0, -6.0])
        starts = [first] + [np.array([rng.uniform(lo, hi) for lo, hi in bounds])
                            for _ in range(RESTARTS)]
        fits = [minimize(self._nll, theta, jac=True, method="L-BFGS-B", bounds=bounds,
                         options={"maxiter": 60}) for theta in starts]
        return min(fits, key=lambda fit: fit.fun).x


def _one_blas_thread():
    """The GP's matrices are small (MAX_TRAIN rows at most), and BLAS's threads
    only fight the tune's compile workers for the cores: with the other core
    of a 2-core machine busy, the bo tests took 19 s with OpenBLAS's 2 threads
    and 5.9 s with one. One thread, through threadpoolctl (the tune extra)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:         # a tune extra installed before it was part of it
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _solve(chol: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.linalg import cho_solve
    return cho_solve((chol, True), b)


def expected_improvement(mean: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """The expected amount by which each point falls below `best` (minimising)."""
    from scipy.special import ndtr
    improvement = best - mean
    z = improvement / sd
    return improvement * ndtr(z) + sd * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


class BayesOpt:
    """The `bo` strategy: search.Search asks `next` for each configuration."""

    def __init__(self, space: TuneSpace, objective: Objective, seed: int | None):
        self.objective = objective
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.points = list(space.valid)
        self.keys = [key(p) for p in self.points]
        self.row = {k: i for i, k in enumerate(self.keys)}
        self.x = features(space, self.points)
        self.theta: np.ndarray | None = None        # the last fit's, where the next starts
        self._fitted: tuple[tuple, GaussianProcess] | None = None

    def next(self, known: dict[str, Evaluation], free) -> Point | None:
        """The valid point that `free(key)` accepts with the highest expected
        improvement (a random one while fewer than INITIAL are known); None
        when `free` accepts none."""
        candidates = [i for i, k in enumerate(self.keys) if free(k)]
        if not candidates:
            return None
        scores = self.scores(known, candidates)
        if scores is None:
            return self.points[self.rng.choice(candidates)]
        return self.points[candidates[int(np.argmax(scores))]]

    def most_promising(self, known: dict[str, Evaluation], points: list[Point]) -> Point | None:
        """Of `points` (valid ones), the one of the highest expected improvement;
        None while the model cannot say (fewer than INITIAL known)."""
        rows = [self.row[key(p)] for p in points]
        scores = self.scores(known, rows)
        return None if scores is None else points[int(np.argmax(scores))]

    def scores(self, known: dict[str, Evaluation], rows: list[int]) -> np.ndarray | None:
        """The expected improvement of the points numbered `rows` (of space.valid),
        from a GP conditioned on `known`; None while fewer than INITIAL are known or
        all passing ones are equal."""
        observed, y = self._observed(known)
        if len(observed) < INITIAL or len(set(y)) < 2:
            return None
        with _one_blas_thread():
            gp = self._model(observed, y)
            mean, sd = gp.predict(self.x[rows])
        return expected_improvement(mean, sd, min(y))

    def _model(self, observed: list[int], y: list[float]) -> GaussianProcess:
        """The GP of the known points. Its hyperparameters are fitted afresh at
        each proposal up to FIT_UNTIL points (a fit's cost grows as n^3 times its
        iterations) and kept after, when the landscape's length scales are known;
        from then on the GP is conditioned on the known points (the best
        MAX_TRAIN of them) again only every max(REFRESH, n/4) new ones, and in
        between the last one ranks the free points: a tune with no --max-evals
        that runs through a space of thousands of points stays a few model
        updates per GPU second, in bounded memory."""
        fitted = (tuple(observed), tuple(y))
        if self._fitted is not None and self._fitted[0] == fitted:
            return self._fitted[1]          # a batch (several GPUs) asks again: the same fit
        n, last = len(observed), (len(self._fitted[0][0]) if self._fitted else 0)
        if n > FIT_UNTIL and self._fitted is not None and n - last < max(REFRESH, last // 4):
            return self._fitted[1]
        rows, targets = observed, np.array(y)
        if n > MAX_TRAIN:       # a space of 100 000 points stays a GP of MAX_TRAIN
            best = np.argsort(targets, kind="stable")[:MAX_TRAIN]
            rows, targets = [observed[i] for i in best], targets[best]
        gp = GaussianProcess(self.x[rows], targets, self.np_rng, self.theta,
                             fit=n <= FIT_UNTIL)
        self.theta, self._fitted = gp.theta, (fitted, gp)
        return gp

    def _observed(self, known: dict[str, Evaluation]) -> tuple[list[int], list[float]]:
        """The rows of the known valid points and their targets: the log of the
        objective (negated when maximising); a failed one (or one whose value
        has no log) the worst target of the passing ones."""
        sign = 1.0 if self.objective.direction == "minimize" else -1.0
        rows, y, failed = [], [], []
        for k, evaluation in known.items():
            if k not in self.row:
                continue
            if evaluation.ok and evaluation.value is not None and evaluation.value > 0:
                rows.append(self.row[k])
                y.append(sign * math.log(evaluation.value))
            else:
                failed.append(self.row[k])
        if y:
            rows += failed
            y += [max(y)] * len(failed)
        return rows, y
