"""Get everything ready that needs no GPU: the binary read (or compiled) and
checked against the spec, the plan made, the launcher built. `launch
--dry-run` stops here; a real launch goes on with the device it was given."""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from .binary.load import Binary, load_binary
from .binary.validate import check_arch, validate
from .plan import Plan, make_plan
from .specialization import check_plan
from .spec import Spec


@dataclass(frozen=True)
class Prepared:
    plan: Plan
    binary: Binary
    launcher: ModuleType | None         # None: prepare(build_launcher=False)

    @property
    def cubin(self) -> bytes:
        return self.binary.cubin

    @property
    def kernel_name(self) -> str:
        return self.binary.kernel.name

    def to_json(self) -> dict:
        kernel = self.binary.kernel
        return {**self.plan.to_json(), "kernel": kernel.name,
                "binary": {"origin": self.binary.origin, "arch": self.binary.info.arch,
                           "param_bytes": kernel.param_bytes, "registers": kernel.registers,
                           "shared_static": kernel.shared_static},
                "launcher": self.launcher.__file__}


def prepare(spec: Spec, device=None, arch: str | None = None, load=None,
            build_launcher: bool = True) -> Prepared:
    """`device` (a driver.Device) when one is open; else `arch` targets compiles.
    `load`: what reads the binary, if not `load_binary` (a session's cache).
    Without `build_launcher` the Prepared has none (a reproducer brings its own)."""
    from .launcher import load_launcher
    target = device.arch if device is not None else arch
    binary = (load or load_binary)(spec, target)
    plan = make_plan(spec)
    validate(plan, binary.info, binary.kernel,
             device.arch if device is not None else arch,
             device.name if device is not None else f"the target {arch}")
    check_plan(plan)
    if spec.globals:                    # the symbols and their sizes, from the cubin itself
        from .binary.cubin import module_globals
        from .module_globals import check_globals
        check_globals(spec, module_globals(binary.cubin), str(spec.kernel.path))
    launcher = load_launcher(plan.leaf_types, plan.num_scratch) if build_launcher else None
    return Prepared(plan, binary, launcher)


def needs_device_target(spec: Spec) -> bool:
    """`source:` and `ptx:` kernels are compiled for the device's arch."""
    return spec.kernel.kind in ("source", "ptx")


def check_device(prepared: Prepared, device) -> None:
    """What prepare() checks against a device, for one prepared without it."""
    check_arch(prepared.binary.info, device.arch, device.name,
               f"kernel.{prepared.plan.spec.kernel.kind}")
