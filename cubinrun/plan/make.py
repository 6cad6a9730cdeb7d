"""What a launch will do, worked out without a GPU: the launch geometry, every
parameter and its source, the buffers and scratch to allocate.

`launch --dry-run` prints this; the real launch executes it.
"""
from __future__ import annotations

from dataclasses import dataclass

from .slots import Slot, bind_slots
from ..specfile import Spec


@dataclass(frozen=True)
class ScratchPlan:
    size: int            # bytes per program (per CTA of the cluster)
    align: int
    nbytes: int          # the whole allocation: CTAs launched x size


@dataclass(frozen=True)
class Plan:
    spec: Spec
    slots: list[Slot]
    global_scratch: ScratchPlan
    profile_scratch: ScratchPlan

    @property
    def leaf_types(self) -> list[str]:
        return [slot.leaf.type for slot in self.slots]

    @property
    def num_scratch(self) -> int:
        return self.spec.launch.scratch_params

    @property
    def cluster(self) -> tuple[int, int, int] | None:
        launch = self.spec.launch
        if launch.cluster is not None:
            return launch.cluster
        return (launch.num_ctas, 1, 1) if launch.num_ctas > 1 else None

    @property
    def ctas(self) -> int:
        gx, gy, gz = self.spec.launched_grid
        return gx * gy * gz

    @property
    def device_bytes(self) -> int:
        return (sum(b.nbytes + b.offset_bytes for b in self.spec.buffers.values())
                + self.global_scratch.nbytes + self.profile_scratch.nbytes)

    def to_json(self) -> dict:
        spec, launch = self.spec, self.spec.launch
        return {
            "kernel": spec.kernel.name,
            "kernel_file": str(spec.kernel.path),
            "kernel_kind": spec.kernel.kind,
            "signature": str(spec.signature),
            "grid": list(spec.grid),
            "launched_grid": list(spec.launched_grid),
            "block": list(spec.block),
            "shared": launch.shared,
            # the block's warps, which the launch uses: num_warps is only the default block's
            "num_warps": -(-spec.block[0] * spec.block[1] * spec.block[2] // 32),
            "num_ctas": launch.num_ctas,
            "cluster": list(self.cluster) if self.cluster else None,
            "cooperative": launch.cooperative,
            "pdl": launch.pdl,
            "params": [{"index": i, "name": s.leaf.path, "type": s.leaf.type,
                        "source": s.kind, "value": s.value if s.kind == "scalar" else None,
                        "from": s.name if s.kind not in ("scalar", "struct") else None,
                        **({"members": [m.to_json() for m in s.members]}
                           if s.kind == "struct" else {})}
                       for i, s in enumerate(self.slots)],
            "scratch": {
                "params": self.num_scratch,
                "global": vars(self.global_scratch),
                "profile": vars(self.profile_scratch),
            },
            "buffers": [{"name": b.name, "dtype": b.dtype.name, "shape": list(b.shape),
                         "bytes": b.nbytes, "offset": b.offset, "init": b.init.describe(),
                         "save": str(b.save) if b.save else None}
                        for b in spec.buffers.values()],
            "globals": [{"name": g.name, "dtype": g.dtype.name, "shape": list(g.shape),
                         "bytes": g.nbytes, "init": g.init.describe()}
                        for g in spec.globals.values()],
            "device_bytes": self.device_bytes,
            "checks": [c.name for c in spec.checks],
            "device_values": {"values": spec.device_values, "source": spec.device_source}
            if spec.device_values else None,
            "notes": list(spec.notes),
            "bench": {"warmup_ms": spec.bench.warmup_ms, "rep_ms": spec.bench.rep_ms,
                      "l2": spec.bench.l2, "bytes": spec.bench.bytes,
                      "flops": spec.bench.flops},
        }


def make_plan(spec: Spec) -> Plan:
    launch = spec.launch
    gx, gy, gz = spec.launched_grid
    ctas = gx * gy * gz

    def scratch(s) -> ScratchPlan:
        return ScratchPlan(s.size, s.align, ctas * s.size)

    return Plan(spec, bind_slots(spec), scratch(launch.global_scratch),
                scratch(launch.profile_scratch))
