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

import contextlib
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
    """A pool that builds points ahead; `submit` them as they are known to come.

    Points that share a binary (a var that only sets the grid, say) compile it
    once: the first goes to the pool, the others are held until its build is
    done and then find the binary in the cache (each still checks its own
    plan against it: block, shared memory)."""

    def __init__(self, space: TuneSpace, arch: str | None, workers: int | None = None,
                 props: str | None = None, pool=None):
        import multiprocessing
        from ..hostdata.threads import worker_count
        self.space, self.arch, self.props = space, arch, props
        self.pool = pool or ProcessPoolExecutor(max_workers=workers or worker_count(),
                                                mp_context=multiprocessing.get_context("spawn"))
        self.futures: dict[str, Future] = {}
        self._compiling: dict[str, Future] = {}         # binary -> the build making it
        self._held: dict[str, list[Point]] = {}         # binary -> points waiting for it
        self._held_keys: set[str] = set()
        self._binaries: dict[str, str] = {}             # point key -> its binary

    def submit(self, points: Sequence[Point]) -> None:
        self._release()
        for point in points:
            k = key(point)
            if k in self.futures or k in self._held_keys:
                continue
            binary = self._binary_of(point)
            making = self._compiling.get(binary)
            if making is not None and not making.done():
                self._held.setdefault(binary, []).append(point)
                self._held_keys.add(k)
                continue
            self.futures[k] = self._build(point)
            self._compiling.setdefault(binary, self.futures[k])

    def wait(self, points: Sequence[Point]) -> list[Built]:
        """The builds of `points` (submitted now if they were not)."""
        self.submit(points)
        out = []
        for point in points:
            k = key(point)
            if k not in self.futures:           # held: its binary's build first
                binary = self._binary_of(point)
                with contextlib.suppress(Exception):
                    self._compiling[binary].result()
                self._release()
            try:
                out.append(self.futures[k].result())
            except Exception as exc:            # the pool process died: the run will say why
                out.append(Built("build error", 3, f"the build process failed: {exc}"))
        return out

    def _build(self, point: Point) -> Future:
        return self.pool.submit(build_point, self.space.spec, self.space.overrides_of(point),
                                dict(point), self.arch, self.props)

    def _release(self) -> None:
        """The held points whose binary is built now go to the pool."""
        for binary in [b for b in self._held if self._compiling[b].done()]:
            for point in self._held.pop(binary):
                self._held_keys.discard(key(point))
                self.futures[key(point)] = self._build(point)

    def _binary_of(self, point: Point) -> str:
        """What names the point's binary: the spec's kernel section as the point
        reads it (its source or binary, options and defines) and the target;
        the point itself when its spec does not read (its build will say why)."""
        if key(point) not in self._binaries:
            from ..specfile import load_spec
            from ..specfile.device_values import for_arch, unavailable
            try:
                kernel = load_spec(self.space.spec, self.space.overrides_of(point),
                                   device=for_arch(self.arch) if self.arch else unavailable()
                                   ).kernel
                self._binaries[key(point)] = f"{self.arch}:{kernel!r}"
            except Exception:
                self._binaries[key(point)] = f"point:{key(point)}"
        return self._binaries[key(point)]

    def seconds(self) -> float:
        """The pool's time on the builds that finished (CPU time, beside the GPU's)."""
        return sum(f.result().seconds for f in self.futures.values()
                   if f.done() and not f.cancelled() and f.exception() is None)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
