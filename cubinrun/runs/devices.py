"""`--devices LIST|all`: which GPUs of this machine the runs go to, one worker
process per entry.

The list is of ordinals in PCI bus order (as nvidia-smi numbers the cards):
this process sets CUDA_DEVICE_ORDER=PCI_BUS_ID before it starts CUDA, and so
does every worker. The launch process only enumerates (cuInit, names and
UUIDs; no context, no memory), then spawns the workers, each with
CUDA_VISIBLE_DEVICES set to its one card before it starts, so a worker sees
that card as its device 0 and nothing else.

An ordinal may be listed more than once (`--devices 0,0`, or
`--workers-per-gpu 2`): that many workers share the card, each with its own
process and context. The GPU time-slices between contexts, so the runs'
host work (spec, data, launcher, check) overlaps the other worker's GPU work,
but a timed kernel can wait behind the other worker's kernels: results say
`device.shared_by` and the command prints a note when it times.

Different GPU models in one command are refused unless `--mixed-devices`:
their timings do not compare, and a sweep spread over them would mix them.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from ..errors import UsageError

MAX_WORKERS_PER_GPU = 16


@dataclass(frozen=True)
class Placement:
    """Where one worker runs: its device ordinal as the worker sees it, the
    environment it starts with, and the tag every record it produces carries."""
    ordinal: int = 0
    env: dict[str, str] = field(default_factory=dict)
    tag: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        ordinal = self.tag.get("ordinal", self.ordinal)
        return f"GPU {ordinal}" + (f" ({self.tag['name']})" if self.tag.get("name") else "")


def parse_devices(text: str) -> list[int] | None:
    """`all` -> None (every visible GPU); `0,2,2` -> [0, 2, 2]."""
    text = text.strip()
    if text == "all":
        return None
    ordinals = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():
            raise UsageError(f"--devices {text}: expected 'all' or ordinals such as 0,1 "
                             f"(got {part!r})")
        ordinals.append(int(part))
    return ordinals


def check_workers_per_gpu(n: int) -> int:
    if not 1 <= n <= MAX_WORKERS_PER_GPU:
        raise UsageError(f"--workers-per-gpu {n}: expected 1 to {MAX_WORKERS_PER_GPU}")
    return n


@dataclass(frozen=True)
class LocalDevice:
    ordinal: int
    name: str
    uuid: str


def enumerate_devices() -> list[LocalDevice]:
    """Every GPU this process may use, in PCI bus order."""
    from ..gpu import driver
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"      # before cuInit reads it
    count = driver.init()
    found = []
    for ordinal in range(count):
        device = driver.get_device(ordinal)
        found.append(LocalDevice(ordinal, device.name, driver.device_uuid(device.handle)))
    return found


def visible_entry(ordinal: int) -> str:
    """CUDA_VISIBLE_DEVICES for a worker on `ordinal` of this process: the
    entry this process was given (an index or a UUID), or the ordinal itself."""
    mine = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mine is not None:
        entries = [e.strip() for e in mine.split(",")]
        if ordinal < len(entries):
            return entries[ordinal]
    return str(ordinal)


def spread(ordinals: list[int]) -> list[int]:
    """Round-robin over the distinct cards in first-seen order (0,0,1,1 -> 0,1,0,1), so
    that with fewer runs than workers every card still gets one."""
    queues: dict[int, int] = {}
    for o in ordinals:
        queues[o] = queues.get(o, 0) + 1
    out: list[int] = []
    while len(out) < len(ordinals):
        for o in queues:
            if queues[o]:
                queues[o] -= 1
                out.append(o)
    return out


def placements(text: str, workers_per_gpu: int = 1, mixed: bool = False,
               limit: int | None = None) -> list[Placement]:
    """One Placement per worker for `--devices TEXT`: at most `limit` (the runs)."""
    check_workers_per_gpu(workers_per_gpu)
    wanted = parse_devices(text)
    devices = enumerate_devices()
    if wanted is None:
        wanted = [d.ordinal for d in devices]
    for ordinal in wanted:
        if ordinal >= len(devices):
            n = len(devices)
            raise UsageError(f"--devices {text}: there {'is' if n == 1 else 'are'} {n} "
                             f"device{'s' if n != 1 else ''} (0..{n - 1})")
    slots = spread([o for o in wanted for _ in range(workers_per_gpu)])
    if limit is not None:
        slots = slots[:max(limit, 1)]
    check_models([devices[o] for o in slots], mixed)
    host = socket.gethostname()
    threads = _threads_per_worker(len(slots))
    result = []
    for ordinal in slots:
        device = devices[ordinal]
        tag = {"ordinal": ordinal, "name": device.name, "uuid": device.uuid, "host": host}
        if slots.count(ordinal) > 1:
            tag["shared_by"] = slots.count(ordinal)
        env = {"CUDA_VISIBLE_DEVICES": visible_entry(ordinal), "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
               "CUBINRUN_THREADS": str(threads)}
        result.append(Placement(0, env, tag))
    return result


def _threads_per_worker(workers: int) -> int:
    """The host threads each worker makes inputs and checks with: the cores shared
    out, so W workers do not start W pools as large as the machine (and the
    capacity check, which counts memory per thread, does not count them W times)."""
    from ..hostdata.threads import worker_count
    return max(1, worker_count() // workers)


def check_models(devices, mixed: bool, flag: str = "--devices") -> None:
    """Refuse different GPU models in one command unless --mixed-devices."""
    names = sorted({d.name for d in devices})
    if len(names) > 1 and not mixed:
        listing = ", ".join(f"{getattr(d, 'ordinal', '?')}: {d.name}" for d in devices)
        raise UsageError(f"{flag}: different GPU models ({listing}) do not time alike; "
                         "pass --mixed-devices to use them together")


def sharing_note(tags: list[dict]) -> str | None:
    """One line when workers share a card and runs are timed."""
    shared = sorted({(t.get("host", ""), t.get("ordinal")) for t in tags if t.get("shared_by")},
                    key=str)
    if not shared:
        return None
    where = ", ".join(f"GPU {o}" for _, o in shared)
    return (f"several workers share {where}: a timed kernel can wait behind another "
            "worker's kernels, so these timings are not a lone GPU's")
