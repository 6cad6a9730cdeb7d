"""Get everything ready that needs no GPU: the spec read and its plan made
once and checked with its data (`plan_spec`), the binary read (or compiled)
and checked against the plan, the launcher built (`prepare`). `launch
--dry-run` stops here (`dry_run`); a real launch goes on with the device it
was given (session.py)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Mapping

from ..binary.load import Binary, load_binary
from ..binary.validate import check_arch, validate
from ..errors import SpecError
from ..plan.make import Plan, make_plan
from ..plan.specialization import check_plan
from ..specfile import Spec, load_spec
from ..specfile.device_values import DeviceValues
from ..specfile.locate import locate, located
from ..specfile.sweep import one_point


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
        return {**self.plan.to_json(), "kernel": kernel.cxx_name, "kernel_mangled": kernel.name,
                "binary": {"origin": self.binary.origin, "arch": self.binary.info.arch,
                           "param_bytes": kernel.param_bytes, "registers": kernel.registers,
                           "shared_static": kernel.shared_static},
                "launcher": self.launcher.__file__}


def plan_spec(path: str | Path, overrides: Mapping[str, str] | None = None,
              device: DeviceValues | None = None) -> Plan:
    """The spec at `path` read with `overrides`, its plan made (once: everything
    after reads it) and checked, and its host data and check references checked
    without making them, so their mistakes are found before any binary or GPU."""
    from ..hostdata.dry_checks import check_data
    try:
        spec = load_spec(path, overrides, device=device)
        plan = make_plan(spec)
        check_plan(plan)
        check_data(spec)
    except SpecError as error:          # as `located` does: the file and the field's line
        raise locate(error, path) from None
    return plan


def plan_one_point(path: str | Path, overrides: Mapping[str, str],
                   device: DeviceValues | None = None) -> tuple[Plan, dict[str, str]]:
    """plan_spec at the spec's one point (specfile.sweep.one_point: a sweep of
    several points is a usage error), and that point's overrides."""
    point = one_point(path, overrides)
    return plan_spec(path, point, device), point


def prepare(plan: Plan, device=None, arch: str | None = None, load=None,
            build_launcher: bool = True) -> Prepared:
    """`device` (a driver.Device) when one is open; else `arch` targets compiles.
    `load`: what reads the binary, if not `load_binary` (a session's cache).
    Without `build_launcher` the Prepared has none (a reproducer brings its own)."""
    from ..launcher import load_launcher
    target = device.arch if device is not None else arch
    with located(plan.spec.path):
        binary = (load or load_binary)(plan.spec, target)
        validate(plan, binary.info, binary.kernel, target,
                 device.name if device is not None else f"the target {arch}")
        if plan.spec.globals:           # the symbols and their sizes, from the cubin itself
            from ..binary.cubin import module_globals
            from ..gpu.module_globals import check_globals
            check_globals(plan.spec, module_globals(binary.cubin), str(plan.spec.kernel.path))
        launcher = load_launcher(plan.leaf_types, plan.num_scratch) if build_launcher else None
    return Prepared(plan, binary, launcher)


def dry_run(path: str | Path, overrides: Mapping[str, str], device: DeviceValues,
            arch: str | None, load=None) -> Prepared:
    """Everything `launch --dry-run` does for one spec at one point; `load` as
    prepare's (binary.load.Binaries().load: a sweep reads its binary once)."""
    return prepare(plan_spec(path, overrides, device), arch=arch, load=load)


def needs_device_target(spec: Spec) -> bool:
    """`source:` and `ptx:` kernels are compiled for the device's arch."""
    return spec.kernel.kind in ("source", "ptx")


def check_device(prepared: Prepared, device) -> None:
    """What prepare() checks against a device, for one prepared without it."""
    check_arch(prepared.binary.info, device.arch, device.name,
               f"kernel.{prepared.plan.spec.kernel.kind}")
