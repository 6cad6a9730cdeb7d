"""`cubinrun repro` from the tests: write a reproducer for a spec (device
values as an H200's), build it with the C compiler that builds launchers, and
run it against the fake libcuda, which records its launches and allocations."""
from __future__ import annotations

import os
import subprocess

from cubinrun.debug.repro import write_repro
from cubinrun.launcher.build import find_compiler
from cubinrun.pipeline.prepare import plan_spec, prepare
from cubinrun.specfile import parse_overrides
from cubinrun.specfile.device_values import for_arch


def write(spec_path, folder, *overrides, arch=None):
    # device values (sm_count...) as an H200's, for the specs that name them
    plan = plan_spec(spec_path, parse_overrides(list(overrides)), for_arch("sm_90"))
    prepared = prepare(plan, arch=arch, build_launcher=False)
    write_repro(prepared, folder)
    return prepared


def build(folder, *flags):
    subprocess.run([*find_compiler().command, "-std=c11", "-O1", "-Wall", "-Wextra", "-Wpedantic",
                    "-Werror", *flags, "-o", str(folder / "repro"), str(folder / "repro.c"),
                    "-ldl", "-lm"], check=True, capture_output=True, text=True)


def run_repro(folder, fake_path, sizes, **env):
    environment = {**os.environ, "CUBINRUN_LIBCUDA": str(fake_path),
                   "FAKECUDA_PARAM_SIZES": ",".join(map(str, sizes)),
                   "FAKECUDA_RECORD": str(folder / "launches.bin"),
                   "FAKECUDA_ALLOCATIONS": str(folder / "allocations.txt"),
                   "REPRO_REPEATS": "2", **env}
    return subprocess.run([str(folder / "repro")], cwd=folder, env=environment,
                          capture_output=True, text=True, timeout=60)

