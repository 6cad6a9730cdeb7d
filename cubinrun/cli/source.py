"""`cubinrun gen`: the launcher's C source for a spec or a signature."""
from __future__ import annotations

import os
import sys

import click

from .common import complete_specs, console, force_option, set_option, write_output


@click.command()
@click.argument("spec_path", metavar="[SPEC]", required=False,
                type=click.Path(dir_okay=False), shell_complete=complete_specs)
@click.option("--signature", "compact", metavar="TYPES",
              help='A signature instead of a spec, e.g. "*fp32,*fp32,i32".')
@click.option("--scratch", type=click.IntRange(0, 2), default=0,
              help="Trailing scratch pointer parameters (with --signature).")
@set_option
@click.option("-o", "--output", metavar="FILE", type=click.Path(),
              help="Write the C source to a file.")
@force_option
def gen(spec_path, compact, scratch, overrides, output, force):
    """Print the launcher C source for a spec or a signature."""
    from ..launcher import generate_source
    from ..signature import expand, parse_compact
    if (spec_path is None) == (compact is None):
        raise click.UsageError("give a SPEC or --signature, not both or neither")
    if compact is not None:
        leaf_types = [leaf.type for leaf in expand(parse_compact(compact))]
    else:
        from ..specfile import load_spec, parse_overrides
        spec = load_spec(spec_path, parse_overrides(overrides))
        leaf_types = [leaf.type for leaf in spec.leaves()]
        scratch = spec.launch.scratch_params
    source = generate_source(leaf_types, scratch)
    if output is not None:
        write_output(output, source, force)
    elif sys.stdout.isatty() and not os.environ.get("NO_COLOR"):    # --no-color too
        from rich.syntax import Syntax
        console().print(Syntax(source, "c", theme="ansi_dark", background_color="default"))
    else:
        sys.stdout.write(source)
