"""`cubinrun schema`: the spec format as a JSON Schema, for editors."""
from __future__ import annotations

import sys

import click

from .common import force_option, write_output


@click.command()
@click.option("-o", "--output", metavar="FILE", type=click.Path(),
              help="Write the schema to a file.")
@force_option
def schema(output, force):
    """Print the JSON Schema of the spec format (draft 2020-12).

    Point an editor at it with a first line in a spec:
    `# yaml-language-server: $schema=PATH/spec.schema.json`."""
    from ..specfile.schema import schema_text
    text = schema_text()
    if output is not None:
        write_output(output, text, force)
    else:
        sys.stdout.write(text)
