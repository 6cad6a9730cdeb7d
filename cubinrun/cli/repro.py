"""`cubinrun repro SPEC -o DIR`: a standalone reproducer (C, driver API only)."""
from __future__ import annotations

import click

from .common import complete_specs, set_option


@click.command()
@click.argument("spec_path", metavar="SPEC", type=click.Path(dir_okay=False),
                shell_complete=complete_specs)
@click.option("-o", "--output", "folder", required=True, metavar="DIR",
              type=click.Path(), help="Folder to write the reproducer into.")
@set_option
@click.option("--arch", metavar="SM", help="Target for compiling source:/ptx: kernels "
              "(default: kernel.arch in the spec, else device 0's).")
@click.option("--force", is_flag=True, help="Overwrite a reproducer already in the folder.")
def repro(spec_path, folder, overrides, arch, force):
    """Write a reproducer: the cubin, the inputs, the expected outputs, one C
    file that launches the kernel through the driver API with cubinrun's exact
    parameter bytes, and run.sh to build and run it (a C compiler and the
    NVIDIA driver are all it needs)."""
    from pathlib import Path

    from ..debug.repro import write_repro
    from ..pipeline.prepare import needs_device_target, prepare
    from ..text import human_bytes
    from .common import current_arch, one_run
    from ..files import named
    named(folder, "-o")             # "" would be the current folder
    plan, _ = one_run(spec_path, overrides, None)
    if needs_device_target(plan.spec) and arch is None:
        arch = plan.spec.kernel.arch or current_arch()   # kernel.arch: no GPU needed
    # a reproducer brings its own launcher: none is built
    written = write_repro(prepare(plan, arch=arch, build_launcher=False), Path(folder),
                          force=force)
    inputs = sum(1 for f in written.files if f.startswith("inputs/"))
    # what was written is said on stderr, as every -o says it: stdout carries data only
    click.echo(f"wrote {written.folder}: kernel.cubin, {inputs} input(s) "
              f"({human_bytes(written.input_bytes)}), expected values for "
              f"{', '.join(written.checks) or 'no output (the spec has no check)'}, repro.c, "
              "run.sh", err=True)
    click.echo(f"run it with: sh {written.folder / 'run.sh'}", err=True)
