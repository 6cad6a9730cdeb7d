"""The cupti timer: each launch's kernel-only duration from the profiler's own
records (CUPTI activity records of kind CONCURRENT_KERNEL: the GPU's start
and end timestamps of every kernel, in ns), through NVIDIA's `cupti-python`.

No event pair is involved, so no offset is subtracted; the samples are taken as
the events timer takes them (behind a spin, flushed when L2 is cold, a clock
probe after each), and the records of cubinrun's own kernels (spin, flush,
probe: all named cubinrun_*) are left out. Enabling the records costs host
time per launch, not kernel time. Every CUPTI call goes through `call`, the
one error check.
"""
from __future__ import annotations

import functools
from typing import Callable

from ...errors import CudaError
from ..timing import (Timed, TimingKernels, TimingOptions, batch_size, sample, sample_cost_ms,
                      sample_count, warm_up)
from . import noise
from .finish import finish

INSTALL = "pip install 'cubinrun[cupti]' (NVIDIA's cupti-python)"
OWN_KERNELS = "cubinrun_"           # the timing kernels' names (data/timing_kernels.cu)
BUFFER_BYTES = 8 << 20              # per activity buffer CUPTI asks for


@functools.lru_cache(maxsize=None)
def _cupti():
    try:
        from cupti import cupti
    except (ImportError, OSError) as e:      # no wheel, or no libcupti for it to load
        raise CudaError(f"--timer cupti needs cupti-python, which is not importable ({e}): "
                        f"{INSTALL}", call="import cupti") from None
    return cupti


def call(name: str, *args):
    """`cupti.<name>(*args)`; a CUPTI error becomes a CudaError naming the call."""
    cupti = _cupti()
    try:
        return getattr(cupti, name)(*args)
    except cupti.cuptiError as e:
        raise CudaError(f"CUPTI {name} failed: {e}", call=name) from None


class KernelRecords:
    """Kernel activity records collected while open (a context manager).

    CUPTI takes its buffer callbacks once per process; they hand records to
    whichever KernelRecords is open."""

    _registered = False
    _open: "KernelRecords | None" = None

    def __init__(self):
        self.records: list[tuple[int, int, str]] = []     # (start ns, end ns, name)

    def __enter__(self) -> "KernelRecords":
        cupti = _cupti()
        if not KernelRecords._registered:
            call("activity_register_callbacks", _buffer_requested, _buffer_completed)
            KernelRecords._registered = True
        KernelRecords._open = self
        call("activity_enable", cupti.ActivityKind.CONCURRENT_KERNEL)
        return self

    def flush(self) -> None:
        """Deliver every finished kernel's record (after a synchronise)."""
        call("activity_flush_all", 1)

    def __exit__(self, *exc) -> None:
        try:
            self.flush()
            call("activity_disable", _cupti().ActivityKind.CONCURRENT_KERNEL)
        finally:
            KernelRecords._open = None

    def durations_us(self) -> list[float]:
        """The measured kernel's durations in the order the GPU ran them."""
        ours = sorted((start, end) for start, end, name in self.records
                      if not name.startswith(OWN_KERNELS))
        return [(end - start) / 1000.0 for start, end in ours]


def _buffer_requested():
    return BUFFER_BYTES, 0              # 0: as many records as fit


def _buffer_completed(activities) -> None:
    target = KernelRecords._open
    if target is None:
        return
    kind = _cupti().ActivityKind.CONCURRENT_KERNEL
    target.records.extend((a.start, a.end, a.name) for a in activities if a.kind == kind)


def measure(launch: Callable[[int], None], stream: int, kernels: TimingKernels,
            options: TimingOptions,
            progress: Callable[[int, int], None] | None = None) -> Timed:
    _cupti()                            # a missing wheel says so before any warm-up
    estimate = warm_up(launch, stream, options)
    flush = kernels.flush if options.l2 == "cold" else None
    per_sample = sample_cost_ms(launch, stream, kernels, flush, estimate)
    count = sample_count(options.rep_ms, per_sample, options.min_samples)
    with KernelRecords() as records:
        enough = None
        if options.max_noise is not None:
            rule = noise.Rule(options.max_noise, options.min_samples)

            def enough(pairs: list[float]) -> bool:
                records.flush()         # the finished batches' records
                return rule.met(records.durations_us())
        got = sample(stream, kernels, launch, count, batch_size(count, options), before=flush,
                     progress=progress, clocks=True, enough=enough)
    durations = records.durations_us()
    if len(durations) != len(got.pairs_us):
        raise CudaError(f"CUPTI recorded {len(durations)} launches of the kernel for "
                        f"{len(got.pairs_us)} samples", call="activity_flush_all")
    return finish(got, None, "cupti", values_us=durations)
