"""Evaluating configurations: each one a checked, timed run through the run
machinery (runs/executor.py: worker processes, a fault replaces the worker),
or, for `--replay`, a look-up in the results of an exhaustive sweep.

An `Evaluation` is what a tune keeps of a run: the point, its status (`ok`,
or why it failed: `check failed`, `build error`, `CUDA error`, `spec error`,
`invalid`, ...), the objective's value when it passed, and the reason when it
did not. A wrong result is a failed configuration: only `ok` ones compete.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import EXIT_BUILD, EXIT_CHECK_FAILED, EXIT_OK, UsageError

Point = dict[str, Any]


@dataclass(frozen=True)
class Objective:
    name: str
    path: tuple[str, ...]           # where a result object holds it
    direction: str                  # minimize or maximize
    unit: str

    def of(self, result: dict) -> float | None:
        value: Any = result
        for part in self.path:
            value = value.get(part) if isinstance(value, dict) else None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
            else None

    def better(self, a: float, b: float) -> bool:
        return a < b if self.direction == "minimize" else a > b

    def missing(self) -> str:
        return {"gbps": "no throughput.gbps (the spec's bench: gives no bytes)",
                "tflops": "no throughput.tflops (the spec's bench: gives no flops)",
                "energy": "no energy.j_per_launch (energy was not measured)",
                }.get(self.name, f"no {'.'.join(self.path)} (the run was not timed)")


OBJECTIVES = {
    "time": Objective("time", ("timing", "median_us"), "minimize", "us"),
    "energy": Objective("energy", ("energy", "j_per_launch"), "minimize", "J"),
    "gbps": Objective("gbps", ("throughput", "gbps"), "maximize", "GB/s"),
    "tflops": Objective("tflops", ("throughput", "tflops"), "maximize", "TFLOP/s"),
}


@dataclass
class Evaluation:
    point: Point
    status: str                     # "ok" or why not
    value: float | None = None      # the objective, when ok
    reason: str | None = None
    exit_code: int = EXIT_OK
    timing: dict | None = None      # median_us, min_us, max_us and samples of the run
    checked: bool = True            # False: the spec checks nothing
    wall_s: float = 0.0
    origin: str = "measured"        # or "stored": measured before, read from storage
    device: str | None = None
    stages_s: dict | None = None    # where the run's wall time went: init, upload, ..., timing
    by: str | None = None           # the search that chose it ("tpe seed 3"), kept in storage

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict:
        return {"point": dict(self.point), "status": self.status, "value": self.value,
                "reason": self.reason, "exit_code": self.exit_code, "timing": self.timing,
                "checked": self.checked, "wall_s": round(self.wall_s, 4),
                "origin": self.origin, "device": self.device, "stages_s": self.stages_s,
                "by": self.by}

    @classmethod
    def from_json(cls, document: dict) -> "Evaluation":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in document.items() if k in names})


def from_result(point: Point, result: dict, objective: Objective) -> Evaluation:
    """A result object (RunRecord.to_json(), a line of `launch --jsonl`) as an Evaluation."""
    timing = result.get("timing") if isinstance(result.get("timing"), dict) else None
    summary = {k: timing.get(k) for k in ("median_us", "min_us", "max_us", "samples")} \
        if timing else None
    check = result.get("check") if isinstance(result.get("check"), dict) else {}
    device = (result.get("device") or {}).get("name") if isinstance(result.get("device"), dict) \
        else None
    code = result.get("exit_code", EXIT_OK)
    error = result.get("error") if isinstance(result.get("error"), dict) else None
    common = dict(timing=summary, wall_s=float(result.get("wall_s") or 0.0), device=device,
                  checked=check.get("passed") is not None, stages_s=_stages(result))
    if code != EXIT_OK or check.get("passed") is False or error:
        status = result.get("status") or "failed"
        reason = (error or {}).get("message") or _check_reason(check) or status
        # an invalid point (a resource limit) under `sweep_invalid: skip` ran with exit 0
        fallback = EXIT_BUILD if status == "invalid" else EXIT_CHECK_FAILED
        return Evaluation(point, status, reason=reason, exit_code=code or fallback, **common)
    if result.get("status") in ("skipped", "invalid", "dry-run"):
        return Evaluation(point, result["status"], reason=result.get("constraint")
                          or result["status"], **common)
    value = objective.of(result)
    if value is None:
        return Evaluation(point, "no objective", reason=objective.missing(), **common)
    return Evaluation(point, "ok", value=value, **common)


def _stages(result: dict) -> dict | None:
    """The run's host stages and the timing's wall time, in seconds."""
    stages = result.get("stages_s") if isinstance(result.get("stages_s"), dict) else {}
    timing = result.get("timing") if isinstance(result.get("timing"), dict) else {}
    if timing.get("elapsed_s") is not None:
        stages = {**stages, "timing": timing["elapsed_s"]}
    return stages or None


def _check_reason(check: dict) -> str | None:
    outputs = check.get("outputs") if isinstance(check.get("outputs"), dict) else {}
    failed = [name for name, out in outputs.items()
              if isinstance(out, dict) and out.get("passed") is False]
    return f"check failed: {', '.join(failed)}" if failed else None


class RunEvaluator:
    """Configurations as runs on the GPU(s): `width` of them at once (one per
    worker: --devices, --ray), each a full checked and timed run. `executor` is
    an executor, or what makes one when the first configuration runs (a tune
    that measures nothing starts no worker)."""

    def __init__(self, executor, space, objective: Objective, width: int | None = None):
        self._executor, self.space, self.objective = executor, space, objective
        self.width = width or max(1, len(executor.tags()))
        self.count = 0

    @property
    def executor(self):
        self.start()
        return self._executor

    def start(self) -> None:
        """Start the workers now (they open CUDA while builds run)."""
        if callable(self._executor):
            self._executor = self._executor()

    def evaluate(self, points: Sequence[Point], timing_only: bool = False) -> list[Evaluation]:
        """Each point's checked, timed run; `timing_only`: timed, not checked (the
        re-timing of points the search checked)."""
        from ..runs.expand import RunTask
        pow2 = tuple(a.name for a in self.space.axes if a.pow2)
        tasks = []
        for point in points:
            tasks.append(RunTask(self.count, self.space.spec, dict(point),
                                 self.space.overrides_of(point), pow2,
                                 timing_only=timing_only))
            self.count += 1
        records = list(self.executor.run(tasks))
        return [from_result(task.point, record.to_json(), self.objective)
                for task, record in zip(tasks, records)]

    def close(self) -> None:
        if not callable(self._executor):
            self._executor.close()


class ReplayEvaluator:
    """Configurations looked up in the results of an exhaustive sweep (`launch
    --jsonl` over the same space), as Kernel Tuner's simulation mode does."""

    width = 1

    def __init__(self, path: str, objective: Objective):
        from ..results.reader import read_results
        from .space import key
        self.path, self.objective = path, objective
        self.results: dict[str, dict] = {}
        for result in read_results(path):
            self.results.setdefault(key(result["point"]), result)
        names = {(r.get("device") or {}).get("name") for r in self.results.values()
                 if isinstance(r.get("device"), dict)} - {None}
        if len(names) > 1:
            raise UsageError(f"{path}: results from several GPU models ({', '.join(sorted(names))})"
                             ": a replay stands for one")
        self.device_name = next(iter(names), "unknown GPU")

    def start(self) -> None:
        pass

    def check_covers(self, space) -> None:
        """The file holds runs of the space's points, not only dry runs (with
        those every evaluation fails and the tune would end as if every
        check had failed)."""
        from .space import key
        covered = [self.results[key(p)] for p in space.valid if key(p) in self.results]
        if not covered:
            raise UsageError(f"{self.path}: holds none of the {len(space.valid)} points of "
                             f"{space.spec}'s space (axes {', '.join(a.name for a in space.axes)})")
        if all(r.get("status") == "dry-run" for r in covered):
            raise UsageError(f"{self.path}: `launch --dry-run` results, with no timing of "
                             f"{space.spec}'s points; replay the --jsonl of a sweep that ran")

    def best(self, space) -> float | None:
        """The best objective among the space's valid points in the file: the
        landscape's best, which a replayed search is measured against."""
        from .space import key
        found = [e.value for e in self.evaluate([p for p in space.valid
                                                 if key(p) in self.results]) if e.ok]
        if not found:
            return None
        return min(found) if self.objective.direction == "minimize" else max(found)

    def evaluate(self, points: Sequence[Point], timing_only: bool = False) -> list[Evaluation]:
        from .space import key
        out = []
        for point in points:
            result = self.results.get(key(point))
            if result is None:
                out.append(Evaluation(point, "not in replay", reason=f"{self.path} has no "
                                      "result for this point", exit_code=EXIT_OK))
            else:
                out.append(from_result(point, result, self.objective))
        return out

    def close(self) -> None:
        pass


WITHIN = 0.01       # "found the best": within 1% of it, the measure of docs/tune.md


def evaluations_to(values: Sequence[float | None], best: float, objective: Objective,
                   tolerance: float = WITHIN) -> int | None:
    """How many evaluations (1-based; None: failed) it took to come within
    `tolerance` of `best`; None if none did."""
    for number, value in enumerate(values, 1):
        if value is not None and (value <= best * (1 + tolerance)
                                  if objective.direction == "minimize"
                                  else value >= best * (1 - tolerance)):
            return number
    return None
