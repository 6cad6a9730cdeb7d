"""`cubinrun props`: what the driver says about each device."""
from __future__ import annotations

import click

from .common import ORDINAL, console, json_option


@click.command()
@click.option("--device", type=ORDINAL, default=None, metavar="N",
              help="Only this CUDA device (default: every device).")
@json_option
def props(device, as_json):
    """Print the properties of every device (or of --device N)."""
    from ..errors import CubinrunError
    from ..gpu.props import collect_all
    try:
        devices = collect_all(device)
    except CubinrunError as error:
        if as_json:         # as launch --json: a JSON document on stdout, the line on stderr
            from ..runs.outcome import error_type
            from .report import print_json
            print_json({"devices": [], "exit_code": error.exit_code,
                        "error": {"type": error_type(error), "message": str(error)}})
        raise
    if as_json:
        from .report import print_json
        print_json({"devices": devices})
    else:
        from .report import render_props
        render_props(devices, console())
