"""`cubinrun tune SPEC`: search the spec's sweep space for the best
configuration (SPEC section 6). The work is in cubinrun/tune/; this module
reads the options, picks who evaluates (the GPU workers, Ray, a replayed
results file) and prints or writes what the tune found."""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass

import click

from ..limits import MAX_SAMPLES
from ..tune.strategies import DEFAULT, STRATEGIES
from .common import (complete_specs, console, device_option, force_option, json_option,
                     set_option, write_output)


@dataclass(frozen=True)
class TuneArgs:
    spec: str
    overrides: tuple[str, ...]
    axes: tuple[str, ...]
    constraints: tuple[str, ...]
    strategy: str
    max_evals: int | None
    time_limit: float | None
    objective: str
    storage: str | None
    top_k: int
    rounds: int
    output: str | None
    force: bool
    as_json: bool
    plot: str | None
    seed: int | None
    device: int | None
    devices: str | None
    workers_per_gpu: int
    ray: str | None
    dry_run: bool
    replay: str | None
    arch: str | None
    warmup: float | None
    rep: float | None
    min_samples: int | None


class _TuneCommand(click.Command):
    """`--ray` takes an address only when the next word is one, as for launch."""

    def parse_args(self, ctx, args):
        from .launch import optional_address
        return super().parse_args(ctx, optional_address(args))


@click.command(cls=_TuneCommand)
@click.argument("spec", type=click.Path(), shell_complete=complete_specs)
@set_option
@click.option("--axis", "axes", multiple=True, metavar="AXIS",
              help="Add or replace a sweep axis, as for launch ('BX=[16,32,64]').")
@click.option("--constraint", "constraints", multiple=True, metavar="EXPR",
              help="A point is searched only where EXPR holds (repeatable).")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=DEFAULT, show_default=True,
              help="brute: every valid point; random; bo: Bayesian optimisation (a Gaussian "
              "process); bo-local, tpe-local: bo or TPE with local steps from the best; "
              "tpe, cmaes, gp: Optuna's model-based samplers.")
@click.option("--max-evals", type=click.IntRange(1), default=None, metavar="N",
              help="Stop once N configurations are known (measured now or before).")
@click.option("--time-limit", type=click.FloatRange(0, min_open=True), default=None,
              metavar="S", help="Stop starting evaluations after S seconds "
              "(the first batch always runs).")
@click.option("--objective", type=click.Choice(["time", "energy", "gbps", "tflops"]),
              default="time", show_default=True, help="What to optimise.")
@click.option("--storage", metavar="URL", help="Where every evaluation is kept: an SQLAlchemy "
              "URL (default sqlite:///<spec>.tune.sqlite beside the spec; a replay keeps "
              "nothing without it).")
@click.option("--top-k", type=click.IntRange(1, 100), default=5, show_default=True,
              metavar="K", help="Re-time the best K interleaved at the end.")
@click.option("--rounds", type=click.IntRange(1, 100), default=3, show_default=True,
              metavar="N", help="Rounds of the final re-timing.")
@click.option("-o", "--output", metavar="BEST.yaml",
              help="Write the spec with the best values pinned.")
@force_option
@json_option
@click.option("--plot", metavar="PATH", help="Plot the objective against evaluations "
              "(.png or .svg; needs cubinrun[plot]).")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=None, metavar="N",
              help="Seed of the strategy, 0 to 2**32-1 (NumPy's range; reproducible).")
@device_option
@click.option("--devices", metavar="LIST|all", help="Evaluate on these GPUs at once (one "
              "worker each), against one storage.")
@click.option("--workers-per-gpu", type=int, default=1, show_default=True, metavar="N",
              help="With --devices or --ray: N workers share each GPU.")
@click.option("--ray", "ray", metavar="[ADDRESS]", help="Evaluate on the GPUs of a Ray "
              "cluster (needs cubinrun[ray]).")
@click.option("--dry-run", is_flag=True, help="Build every configuration (no GPU) and say how "
              "many the constraints leave and how many build.")
@click.option("--replay", metavar="RESULTS.jsonl", help="Evaluate from the results of an "
              "exhaustive sweep (launch --jsonl) instead of running.")
@click.option("--arch", metavar="SM", help="With --dry-run: the target to build for (sm_90).")
@click.option("--warmup", type=float, default=None, metavar="MS", help="Warm-up budget in ms.")
@click.option("--rep", type=float, default=None, metavar="MS", help="Timing budget in ms.")
@click.option("--min-samples", type=click.IntRange(1, MAX_SAMPLES), default=None, metavar="N",
              help="Take at least N samples a configuration (default 10; Kernel Tuner takes 7).")
def tune(spec, overrides, axes, constraints, strategy, max_evals, time_limit, objective, storage,
         top_k, rounds, output, force, as_json, plot, seed, device, devices, workers_per_gpu,
         ray, dry_run, replay, arch, warmup, rep, min_samples):
    """Find the best configuration of the spec's sweep space: every evaluation a
    checked, timed run, kept in storage so a tune resumes and nothing is measured
    twice."""
    from ..errors import SpecError
    args = TuneArgs(spec, overrides, axes, constraints, strategy, max_evals, time_limit,
                    objective, storage, top_k, rounds, output, force, as_json, plot, seed,
                    device, devices, workers_per_gpu, ray, dry_run, replay, arch, warmup, rep,
                    min_samples)
    try:
        code = _tune(args)
    except SpecError as error:
        from ..specfile.locate import locate
        raise locate(error, spec) from None
    sys.exit(code)


def _check(args: TuneArgs) -> None:
    from ..errors import UsageError
    from .common import existing
    existing(args.spec)
    if args.dry_run and (args.replay or args.output or args.plot or args.storage):
        raise UsageError("--dry-run builds the space only: no --replay, -o, --plot or --storage")
    spread = args.devices is not None or args.ray is not None
    if args.devices is not None and args.ray is not None:
        raise UsageError("--devices and --ray: choose one")
    if spread and args.device is not None:
        raise UsageError("--device picks one GPU; with --devices or --ray leave it out")
    if args.replay and (spread or args.device is not None):
        raise UsageError("--replay runs nothing: no --device, --devices or --ray")
    if args.dry_run and spread:
        raise UsageError("--dry-run needs no GPU: --devices and --ray do not apply")
    if args.arch and not args.dry_run:
        raise UsageError("--arch is the target of --dry-run; a tune builds for its GPU")
    from ..files import check_output, named
    named(args.plot, "--plot")
    named(args.output, "-o")
    if args.plot:
        from ..results.plot import check_path, require_matplotlib
        check_path(args.plot)
        require_matplotlib()
        check_output(args.plot, True, "--plot")
    if args.output:
        check_output(args.output, args.force)      # before any GPU work, not after
    if args.time_limit is not None and math.isnan(args.time_limit):    # passes click's range
        raise UsageError("--time-limit nan: expected a number of seconds above 0")
    from ..specfile.model import budget_problem
    for name, value in (("warmup", args.warmup), ("rep", args.rep)):
        if value is not None and (problem := budget_problem(value)):
            raise UsageError(f"--{name} {problem}")


def _tune(args: TuneArgs) -> int:
    from ..errors import UsageError
    from ..specfile import parse_overrides
    from ..tune.space import load_space
    _check(args)
    initialising = None
    if not (args.dry_run or args.replay or args.ray is not None):
        # cuInit (~0.3 s in the driver, without the GIL) while the space is made and
        # Optuna imported; the GPU's name and arch then come at once
        from ..gpu import driver
        from ..hostdata.threads import on_thread
        initialising = on_thread(driver.init, name="cubinrun-cuinit")
    try:
        overrides = parse_overrides(args.overrides)
        space = load_space(args.spec, overrides, args.axes, args.constraints)
        if not space.valid:
            raise UsageError(f"{args.spec}: the constraints leave none of the {space.size} "
                             "points")
        if args.dry_run:
            return _dry_run(space, args)
        return _search(space, args)
    finally:
        if initialising is not None:    # never exit with the driver mid-initialisation
            from concurrent.futures import wait
            wait([initialising])


# -- the dry run --

def _dry_run(space, args: TuneArgs) -> int:
    from ..errors import EXIT_OK, EXIT_USAGE
    from ..runs.outcome import most_severe
    from ..tune.prebuild import Prebuilder
    from .common import current_arch
    arch = args.arch or _spec_arch(args.spec) or current_arch()
    started = time.perf_counter()
    builder = Prebuilder(space, arch)
    try:
        builder.submit(space.valid)
        built = builder.wait(space.valid)
    finally:
        builder.close()
    failed = [(p, b) for p, b in zip(space.valid, built) if b.status != "ok"]
    ok = len(built) - len(failed)
    if args.as_json:
        from .report import print_json
        print_json({"spec": args.spec, "arch": arch, "points": space.size,
                    "valid": len(space.valid), "skipped": len(space.skipped), "built": ok,
                    "failed": [{"point": p, "status": b.status, "reason": b.reason}
                               for p, b in failed],
                    "wall_s": round(time.perf_counter() - started, 3)})
    else:
        from ..runs.expand import point_text
        out = console()
        for point, build in failed:
            out.print(f"{build.status}: {point_text(point)}: {build.reason}", markup=False,
                      highlight=False)
        out.print(f"{space.size} points, {len(space.valid)} left by the constraints, "
                  f"{ok} build ({arch}, {time.perf_counter() - started:.1f} s)",
                  markup=False, highlight=False)
    if not ok:
        return most_severe(b.exit_code for _, b in failed)
    # a point the spec cannot describe is the spec's mistake (launch --dry-run exits 2
    # for it too); one that does not build is a configuration the tune records as failed
    return EXIT_USAGE if any(b.exit_code == EXIT_USAGE for _, b in failed) else EXIT_OK


def _spec_arch(spec: str) -> str | None:
    from ..specfile.yamlload import load_yaml_file
    from pathlib import Path
    tree = load_yaml_file(Path(spec))
    kernel = tree.get("kernel") if isinstance(tree, dict) else None
    arch = kernel.get("arch") if isinstance(kernel, dict) else None
    return arch if isinstance(arch, str) else None


# -- the search --

def _search(space, args: TuneArgs) -> int:
    from ..tune import store
    from ..tune.evaluate import OBJECTIVES
    from ..tune.search import Budget, Search
    from ..tune.strategies import check_optuna_installed, make_sampler
    check_optuna_installed()
    objective = OBJECTIVES[args.objective]
    started = time.perf_counter()
    evaluator, gpu, arch, extra = _evaluator(space, args, objective)
    prebuilder = None
    try:
        # a replay is a simulation: it keeps nothing unless --storage says where
        url = args.storage or (None if args.replay else store.default_url(args.spec))
        if store.is_new(url):
            # nothing is stored yet, so every point will run: the workers start
            # CUDA now, while this process imports Optuna and opens the storage
            # (~0.8 s); a resumed tune may measure nothing and then starts no worker
            evaluator.start()
        name = store.study_name(gpu, args.spec, space.overrides, args.axes, extra)
        inputs_of = store.InputDigests(space, fixed=extra or None)
        code = _finished(space, args, objective, evaluator, gpu, url, name, inputs_of, started)
        if code is not None:
            return code
        sampler = make_sampler(args.strategy, args.seed)
        study = store.open_study(url, name, objective.direction, sampler)
        if arch is not None:
            from ..hostdata.threads import worker_count
            from ..tune.prebuild import Prebuilder
            # half the cores build ahead; the other half make the running point's
            # inputs, references and checks (the first point's is on the critical path)
            prebuilder = Prebuilder(space, arch, workers=max(1, worker_count() // 2))
        progress = _Progress(objective, args)
        search = Search(space, study, args.strategy, evaluator, objective,
                        Budget(args.max_evals, args.time_limit), inputs_of, args.seed,
                        prebuilder, progress)
        search.run()
        searched = time.perf_counter()
        compile_ahead_s = 0.0
        if prebuilder is not None:
            compile_ahead_s = prebuilder.seconds()
            prebuilder.close()
            prebuilder = None
        everything = _in_order(store.read_stored(study, inputs_of, space).done,
                               search.evaluations)
        measured_now = len(search.evaluations)
        candidates, retimed_now = _retime(study, everything, evaluator, objective, args)
        retimed = time.perf_counter()
    finally:
        if prebuilder is not None:
            prebuilder.close()
        evaluator.close()
    first = search.first_run_at or searched
    seconds = {"to_first_run": first - started, "search": searched - first,
               "retime": retimed - searched, "close": time.perf_counter() - retimed}
    from ..tune.output import time_spent
    seconds["spent"] = time_spent(search.evaluations, compile_ahead_s)
    replay_best = evaluator.best(space) if args.replay else None
    return _report(args, space, objective, gpu, url, name, everything, measured_now,
                   candidates, retimed_now, search, time.perf_counter() - started, seconds,
                   replay_best)


def _finished(space, args: TuneArgs, objective, evaluator, gpu, url, name, inputs_of,
              started: float) -> int | None:
    """The report of a resumed tune that has nothing left to measure, read from
    its SQLite file without Optuna (tune/finished.py); None when the study must
    be opened: something is left to measure, or the storage is not SQLite."""
    from types import SimpleNamespace
    from ..tune import store
    from ..tune.finished import read_finished, stored_candidates
    if store.is_new(url):
        return None
    finished = read_finished(url, name, objective.direction, space, inputs_of, args.max_evals,
                             store.CLAIM_S)
    if finished is None:
        return None
    candidates = stored_candidates(finished, objective, args.top_k, bool(args.replay))
    if candidates is None:
        return None
    read_s = time.perf_counter() - started
    seconds = {"to_first_run": 0.0, "search": 0.0, "retime": 0.0, "close": 0.0,
               "read_storage": read_s, "spent": {}}
    replay_best = evaluator.best(space) if args.replay else None
    return _report(args, space, objective, gpu, url, name, finished.evaluations, 0, candidates,
                   False, SimpleNamespace(invalid_proposals=0), time.perf_counter() - started,
                   seconds, replay_best)


def _in_order(stored: dict, mine: list) -> list:
    """Every evaluation of the study in the order it was told; this process's
    own are marked measured."""
    from ..tune.space import key
    measured = {key(e.point) for e in mine}
    for k, evaluation in stored.items():
        if k in measured:
            evaluation.origin = "measured"
    return list(stored.values())


def _evaluator(space, args: TuneArgs, objective):
    """(evaluator, GPU model, arch to prebuild for or None, study-name extra)."""
    from ..pipeline.result import RunOptions
    from ..tune.evaluate import ReplayEvaluator, RunEvaluator
    if args.replay:
        evaluator = ReplayEvaluator(args.replay, objective)
        evaluator.check_covers(space)
        from ..runs.bundle import digest
        from pathlib import Path
        return evaluator, evaluator.device_name, None, "replay:" + digest(
            Path(args.replay).read_bytes())
    _check_objective(space, objective)
    options = RunOptions(device=args.device, warmup_ms=args.warmup, rep_ms=args.rep,
                         min_samples=args.min_samples, progress=False,
                         energy=objective.name == "energy")
    if args.ray is not None:
        from ..runs.ray_backend import RayExecutor
        executor = RayExecutor(options, args.ray, args.workers_per_gpu)
        tags = executor.tags()
        return RunEvaluator(executor, space, objective), tags[0].get("name", "GPU"), None, ""
    from ..gpu import driver
    from ..runs.devices import placements
    from ..runs.executor import ProcessExecutor
    chosen = placements(args.devices if args.devices is not None else str(args.device or 0),
                        args.workers_per_gpu if args.devices is not None else 1)
    arch = driver.get_device(chosen[0].tag["ordinal"]).arch
    evaluator = RunEvaluator(lambda: ProcessExecutor(options, chosen), space, objective,
                             width=len(chosen))
    return evaluator, chosen[0].tag["name"], arch, ""


def _check_objective(space, objective) -> None:
    """An objective the runs cannot give is refused before any run."""
    from ..errors import UsageError
    from ..specfile import load_spec
    from ..specfile.device_values import for_arch
    if objective.name in ("gbps", "tflops"):
        try:
            spec = load_spec(space.spec, space.overrides_of(space.valid[0]),
                             device=for_arch("sm_90"))
        except Exception:
            return                          # the runs say what is wrong with it
        field = "bytes" if objective.name == "gbps" else "flops"
        if getattr(spec.bench, field) is None:
            raise UsageError(f"--objective {objective.name}: {space.spec} gives no bench.{field}")


def _retime(study, everything, evaluator, objective, args: TuneArgs):
    from ..tune import retime, store
    best = retime.top(everything, objective, args.top_k)
    if not best:
        return [], False
    stored = retime.from_stored(store.retimed(study), best, objective)
    if stored is not None:
        return stored, False
    if args.replay:         # a replay has one value per point: the ranking is the search's
        candidates = [retime.Candidate(e.point, e.value, [e.value], []) for e in best]
        return candidates, False
    candidates = retime.retime(best, evaluator, objective, args.rounds)
    store.save_retimed(study, retime.to_stored(best, candidates))
    return candidates, True


class _Progress:
    """One line per evaluation on stderr."""

    def __init__(self, objective, args: TuneArgs):
        self.objective, self.best = objective, None
        self.limit = args.max_evals

    def __call__(self, number: int, evaluation) -> None:
        from ..runs.expand import point_text
        from ..tune.output import value_text
        if evaluation.ok and (self.best is None or self.objective.better(evaluation.value,
                                                                          self.best)):
            self.best = evaluation.value
        what = value_text(evaluation.value, self.objective) if evaluation.ok else \
            f"{evaluation.status}: {evaluation.reason}"
        sys.stderr.write(f"[{number}] {point_text(evaluation.point)}: {what}\n")
        sys.stderr.flush()


def _report(args: TuneArgs, space, objective, gpu, url, name, everything, measured_now,
            candidates, retimed_now, search, wall_s, seconds: dict | None = None,
            replay_best: float | None = None) -> int:
    from ..errors import EXIT_CHECK_FAILED, EXIT_OK
    from ..runs.outcome import most_severe
    from ..tune import output, retime, store
    passed = [e for e in everything if e.ok]
    best = candidates[0] if candidates and candidates[0].value is not None else None
    if best is None and passed:
        top = retime.top(everything, objective, 1)[0]
        best = retime.Candidate(top.point, top.value, [top.value], [])
    if best is not None:
        code = EXIT_OK
    else:
        failures = [e.exit_code for e in everything if e.exit_code]
        code = most_severe(failures) if failures else EXIT_CHECK_FAILED
    if args.output and best is not None:
        note = (f"tuned by cubinrun tune ({args.strategy}, {objective.name}) on {gpu}: "
                f"{value_text_of(best, objective)}")
        pinned, notes = output.relocated(output.pinned_spec(args.spec, best.point, note),
                                         args.spec, args.output)
        write_output(args.output, pinned, args.force)
        for line in notes:
            sys.stderr.write(f"note: -o {args.output}: {line}\n")
    if args.plot:
        output.plot(everything, objective, args.plot, f"{args.spec} on {gpu}")
    unchecked = any(e.ok and not e.checked for e in everything)
    document = {
        "spec": args.spec, "device": {"name": gpu}, "strategy": args.strategy,
        "objective": {"name": objective.name, "direction": objective.direction,
                      "unit": objective.unit},
        "storage": store.shown_url(url), "study": name,
        "space": {"points": space.size, "valid": len(space.valid),
                  "skipped": len(space.skipped)},
        "measured": measured_now, "stored": len(everything) - measured_now,
        "invalid_proposals": search.invalid_proposals,
        "evaluations": [e.to_json() for e in everything],
        "best": ({"point": best.point, "value": best.value,
                  "set": output.set_arguments(best.point),
                  **_measured_by(everything, best.point)} if best else None),
        "top": [c.to_json() for c in candidates], "retimed": retimed_now,
        "gap": retime.gap(candidates), "span": retime.span(candidates),
        "unchecked": unchecked, "wall_s": round(wall_s, 3), "exit_code": code,
        # where the wall time went: from the start to the first run on the GPU (set-up,
        # the first build), the search, the re-timing, closing the workers
        "seconds": {k: round(v, 3) for k, v in (seconds or {}).items() if k != "spent"},
        # summed over the configurations measured now: the pool's builds, each run's
        # own build and load, its stages (init, upload, launch, download, check), timing
        "spent_s": (seconds or {}).get("spent", {}),
    }
    if args.replay:
        document["replay"] = _replay_measure(everything, objective, replay_best)
    if args.as_json:
        from .report import print_json
        print_json(document)
        return code
    _print_report(document, candidates, objective, best)
    if not measured_now and args.max_evals is not None and len(everything) >= args.max_evals:
        console(stderr=True).print(
            f"the study already holds {len(everything)} configurations: --max-evals "
            f"{args.max_evals} measures nothing more (raise it to search further)",
            markup=False, highlight=False)
    return code


def _measured_by(everything, point) -> dict:
    """Whether this tune measured the best point or reused an earlier one's
    measurement (another strategy or seed continuing the study), and whose."""
    from ..tune.space import key
    found = next((e for e in everything if key(e.point) == key(point)), None)
    return {"origin": found.origin, "by": found.by} if found is not None else {}


def _replay_measure(everything, objective, best: float | None) -> dict:
    """How good a replayed search was: the evaluations it took to come within
    1% of the landscape's best (None: it did not)."""
    from ..tune.evaluate import WITHIN, evaluations_to
    needed = None if best is None else evaluations_to(
        [e.value if e.ok else None for e in everything], best, objective)
    return {"best": best, "tolerance": WITHIN, "evaluations_to_within": needed}


def value_text_of(candidate, objective) -> str:
    from ..tune.output import value_text
    return value_text(candidate.value, objective)


def _replay_line(document: dict, objective) -> str:
    from ..tune.output import value_text
    replay, evaluations = document["replay"], len(document["evaluations"])
    if replay["best"] is None:
        return "the replayed file holds no passing configuration of this space"
    target = (f"within {replay['tolerance']:.0%} of the replay's best "
              f"({value_text(replay['best'], objective)})")
    if replay["evaluations_to_within"] is None:
        return f"not {target} in {evaluations} evaluations"
    return f"{target} after {replay['evaluations_to_within']} evaluations"


def _print_report(document: dict, candidates, objective, best) -> None:
    from rich.markup import escape
    from rich.table import Table
    from ..runs.expand import point_text
    from ..tune.output import value_text
    out = console()
    err = console(stderr=True)
    if document["unchecked"]:
        err.print("note: the spec checks no output: a configuration that computes a wrong "
                  "result could win", markup=False, highlight=False)
    err.print(f"{document['measured']} measured, {document['stored']} from storage "
              f"({document['storage']}), {document['space']['valid']} valid of "
              f"{document['space']['points']} points, {document['wall_s']:.1f} s",
              markup=False, highlight=False)
    if candidates:
        table = Table(show_edge=False, pad_edge=False)
        for column in ("rank", "point", f"{objective.name}", "search", "spread"):
            table.add_column(column, justify="left" if column == "point" else "right")
        for rank, c in enumerate(candidates, 1):
            table.add_row(str(rank), escape(point_text(c.point)), value_text(c.value, objective),
                          value_text(c.search_value, objective),
                          f"{c.spread:.1%}" if c.spread is not None else "-")
        out.print(table)
        if document["gap"] is not None:
            span = "-" if document["span"] is None else f"{document['span']:.2%}"
            out.print(f"the best leads the next by {document['gap']:.2%}; the top "
                      f"{len(candidates)} span {span}", markup=False, highlight=False)
    if document["measured"] and not document.get("replay"):
        err.print("time spent: " + ", ".join(f"{name} {value:.2f} s" for name, value in
                                             document["spent_s"].items() if value),
                  markup=False, highlight=False)
    if "replay" in document:
        err.print(_replay_line(document, objective), markup=False, highlight=False)
    if best is None:
        err.print("no configuration passed", markup=False, highlight=False)
        return
    out.print(f"best: {document['best']['set']}", markup=False, highlight=False)
    if document["best"].get("origin") == "stored":
        by = document["best"]["by"] or "unknown"
        err.print(f"the best was measured by an earlier tune ({by}), read from storage",
                  markup=False, highlight=False)
