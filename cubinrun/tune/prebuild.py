"""Building configurations ahead, on the CPU cores: the NVRTC cubin and the
launcher of each upcoming point, while the GPU times the current one. A
build lands in the cache (cubinrun's cache folder), so the run that follows
finds it there. `tune --dry-run` builds every point this way.

The builds run in spawned processes (a pool as large as the cores allow):
NVRTC and the C compiler then use every core whatever the GIL does, and a
compiler that crashes takes only its pool process. A build that fails here
gives the status and reason its run would end with: the dry run reports it,
and a tune records it without running the point.
"""
from __future__ import annotations

from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from .space import Point, TuneSpace, key


@dataclass(frozen=True)
class Built:
    """One point's build: `status` ok, or the run status it would end with."""
    status: str
    exit_code: int = 0
    reason: str | None = None
    seconds: float = 0.0            # the pool process's time on it (off the GPU's path)


def build_point(spec: str, overrides: dict[str, str], point: Point, arch: str | None,
                props: str | None = None) -> Built:
    """Everything but the GPU for one point (a pool process runs this)."""
    from ..errors import CubinrunError, SpecError
    from ..pipeline.prepare import dry_run
    from ..runs.expand import RunTask
    from ..runs.outcome import RunRecord
    from ..specfile.device_values import for_arch, from_props_file, unavailable
    from ..specfile.locate import locate
    import time
    started = time.perf_counter()
    device = from_props_file(props) if props else for_arch(arch) if arch else unavailable()
    try:
        dry_run(spec, overrides, device, arch)
    except CubinrunError as error:
        if isinstance(error, SpecError):
            locate(error, spec)
        record = RunRecord.failed(RunTask(0, spec, dict(point), overrides), error)
        return Built(record.status, record.exit_code, record.error,
                     time.perf_counter() - started)
    return Built("ok", seconds=time.perf_counter() - started)


class Prebuilder:
    """A pool that builds points ahead; `submit` them as they are known to come."""

    def __init__(self, space: TuneSpace, arch: str | None, workers: int | None = None,
                 props: str | None = None):
        import multiprocessing
        from ..hostdata.threads import worker_count
        self.space, self.arch, self.props = space, arch, props
        self.pool = ProcessPoolExecutor(max_workers=workers or worker_count(),
                                        mp_context=multiprocessing.get_context("spawn"))
        self.futures: dict[str, Future] = {}

    def submit(self, points: Sequence[Point]) -> None:
        for point in points:
            k = key(point)
            if k not in self.futures:
                self.futures[k] = self.pool.submit(build_point, self.space.spec,
                                                   self.space.overrides_of(point), dict(point),
                                                   self.arch, self.props)

    def wait(self, points: Sequence[Point]) -> list[Built]:
        """The builds of `points` (submitted now if they were not)."""
        self.submit(points)
        out = []
        for point in points:
            try:
                out.append(self.futures[key(point)].result())
            except Exception as exc:            # the pool process died: the run will say why
                out.append(Built("build error", 3, f"the build process failed: {exc}"))
        return out

    def seconds(self) -> float:
        """The pool's time on the builds that finished (CPU time, beside the GPU's)."""
        return sum(f.result().seconds for f in self.futures.values()
                   if f.done() and not f.cancelled() and f.exception() is None)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
