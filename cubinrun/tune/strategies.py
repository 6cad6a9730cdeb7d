"""The search strategies: which configuration to measure next.

`brute` (every valid point in sweep order) and `random` (valid points in a
seeded random order) choose points themselves, and so does `bo` (Bayesian
optimisation: a Gaussian process over the enumerated valid points, each
proposal the one of the highest expected improvement, gaussian.py);
`bo-local` (the default) is `bo` with every other configuration a local step
from the best so far, or from a runner-up while the best stalls (local.py).
The others are Optuna's samplers: `tpe` (tree-structured Parzen estimator),
`tpe-local` (TPE with the local steps), `cmaes` (CMA-ES over the axes' value
indexes; a string axis is sampled independently, since CMA-ES has no
categories) and `gp` (Optuna's Gaussian process; it needs PyTorch). Optuna
is the `tune` extra and is imported only when a tune runs, so start-up does
not pay for it.
"""
from __future__ import annotations

from ..errors import UsageError

STRATEGIES = ("brute", "random", "bo-local", "bo", "tpe-local", "tpe", "cmaes", "gp")
DEFAULT = "bo-local"        # the best at 20 and 60 evaluations on real landscapes (docs/tune.md)
OWN_ORDER = ("brute", "random")         # these pick points themselves, no sampler model
CHOOSERS = ("bo", "bo-local")          # these too, from a model of their own (gaussian.py)
LOCAL_STEPS = ("tpe-local", "bo-local")  # every other point a neighbour of a top one (local.py)
LEARNS_CONSTRAINTS = ("tpe", "tpe-local", "gp")     # told a failure as an infeasible trial


NEEDS_OPTUNA = "cubinrun tune needs Optuna, an optional extra: pip install 'cubinrun[tune]'"


def require_optuna():
    try:
        import optuna
    except ImportError:
        raise UsageError(NEEDS_OPTUNA) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def check_optuna_installed() -> None:
    """require_optuna's error, without the import (~0.3 s with SQLAlchemy's), so
    that a tune can start its GPU workers first and import Optuna meanwhile."""
    _require("optuna", NEEDS_OPTUNA)


def make_sampler(strategy: str, seed: int | None):
    """An Optuna sampler for `strategy`, which the search can steer (`Steered`). A
    failed configuration is a trial whose constraint is violated (store.record),
    which TPE and the GP learn to avoid."""
    import warnings
    optuna = require_optuna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return steered(_sampler(optuna.samplers, strategy, seed))


def steered(base):
    """`base`, except that while `.forced` holds parameters, a trial gets those.

    Brute force and random search choose their points themselves, and a
    model-based search falls back to a random valid point when its sampler
    keeps proposing invalid or known ones. Optuna's own way, enqueue_trial,
    leaves a waiting trial in storage that two processes sharing an SQLite
    study can both take (SQLite has no SELECT ... FOR UPDATE); a point handed
    to this process's sampler cannot be taken by another."""
    from optuna.samplers import BaseSampler

    class Steered(BaseSampler):
        def __init__(self):
            self.base, self.forced = base, None

        def infer_relative_search_space(self, study, trial):
            return {} if self.forced is not None else \
                self.base.infer_relative_search_space(study, trial)

        def sample_relative(self, study, trial, search_space):
            return {} if self.forced is not None else \
                self.base.sample_relative(study, trial, search_space)

        def sample_independent(self, study, trial, name, distribution):
            if self.forced is not None:
                return self.forced[name]
            return self.base.sample_independent(study, trial, name, distribution)

        def before_trial(self, study, trial):
            self.base.before_trial(study, trial)

        def after_trial(self, study, trial, state, values):
            self.base.after_trial(study, trial, state, values)

        def reseed_rng(self):
            self.base.reseed_rng()

    return Steered()


def _sampler(samplers, strategy: str, seed: int | None):
    if strategy in OWN_ORDER + CHOOSERS:
        return samplers.RandomSampler(seed=seed)     # never asked: the search chooses
    if strategy in ("tpe", "tpe-local"):
        # multivariate: the axes of a kernel interact (block x tile); startup as
        # Kernel Tuner's model-based strategies use, a tenth of a typical budget
        return samplers.TPESampler(seed=seed, multivariate=True, group=True,
                                   n_startup_trials=10)
    if strategy == "cmaes":
        _require("cmaes", "--strategy cmaes needs the cmaes package: pip install 'cubinrun[tune]'")
        return samplers.CmaEsSampler(seed=seed, n_startup_trials=5)
    if strategy == "gp":
        _require("torch", "--strategy gp needs PyTorch (Optuna's Gaussian process): "
                          "pip install torch")
        return samplers.GPSampler(seed=seed, n_startup_trials=10)
    raise UsageError(f"--strategy {strategy}: expected one of {', '.join(STRATEGIES)}")


def _require(module: str, message: str) -> None:
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise UsageError(message)
