"""`cubinrun props`: what the driver says about each device."""
from __future__ import annotations

import click

from .common import console, device_option, json_option


@click.command()
@device_option
@json_option
def props(device, as_json):
    """Print the properties of every device (or of --device N)."""
    from ..gpu.props import collect_all
    devices = collect_all(device)
    if as_json:
        from .report import print_json
        print_json({"devices": devices})
    else:
        from .report import render_props
        render_props(devices, console())
