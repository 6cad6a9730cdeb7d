"""Module globals (`globals:`): checked against the binary, written before the
launch, read back for a check.

The cubin's symbol table says which `__constant__` / `__device__` variables
the module has and their sizes (binary/cubin.module_globals): a spec naming
one it lacks, or giving more bytes than the symbol holds, is refused before
anything runs (also in a dry run). On the device, cuModuleGetGlobal gives the
symbol's address and size (the driver's word is checked again); the values
are made like a buffer's input and copied there on the staging stream with
the buffers, so each launch that follows an upload (the checked one, and each
of `--repeat`'s, which upload every input again) sees them. A global entry
smaller than its symbol fills its start. A C++ global inside a namespace has a
mangled symbol; the spec may name it either way (`ns::table` or `_ZN2ns5tableE`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import driver
from ..errors import SpecError, shorten
from ..specfile.model import BufferArg


@dataclass
class DeviceGlobal:
    spec: BufferArg
    values: Any                     # hostdata.InputValues
    pointer: int
    size: int                       # the symbol's bytes


def symbol_for(name: str, available: dict[str, int]) -> str | None:
    """The module's symbol a spec's global name means: itself, or the symbol whose
    demangled name it is."""
    if name in available:
        return name
    from ..binary.cubin import demangle
    for symbol in available:
        if demangle(symbol) == name:
            return symbol
    return None


def check_globals(spec, available: dict[str, int], where: str) -> dict[str, str]:
    """{spec name: symbol}; SpecError naming the global's YAML line otherwise."""
    symbols = {}
    for name, wanted in spec.globals.items():
        field, line = f"globals.{name}", spec.global_lines.get(name)
        symbol = symbol_for(name, available)
        if symbol is None:
            raise SpecError(f"{where} has no global {name!r}; its globals: "
                            f"{shorten(describe(available), 300)}", field=field, line=line)
        _check_size(wanted, available[symbol], field, line)
        symbols[name] = symbol
    return symbols


def describe(available: dict[str, int]) -> str:
    """`d_filter (4356 bytes), ns::d_table (_ZN2ns7d_tableE, 16 bytes)`."""
    from ..binary.cubin import demangle
    parts = []
    for symbol, size in available.items():
        shown = demangle(symbol)
        parts.append(f"{shown} ({symbol}, {size} bytes)" if shown else f"{symbol} ({size} bytes)")
    return ", ".join(parts) or "none"


def _check_size(wanted: BufferArg, size: int, field: str, line: int | None) -> None:
    if wanted.nbytes > size:
        what = (f"{list(wanted.shape)} of {wanted.dtype.name}" if wanted.shape
                else f"one {wanted.dtype.name}")
        raise SpecError(f"{wanted.nbytes} bytes ({what}) do not fit the symbol {wanted.name!r} "
                        f"of {size} bytes", field=field, line=line)


def bind(spec, module, cubin: bytes) -> dict[str, DeviceGlobal]:
    """Each global's address in the loaded `module` and its input (not made yet)."""
    from ..binary.cubin import module_globals
    from ..hostdata.values import input_values
    if not spec.globals:
        return {}
    symbols = check_globals(spec, module_globals(cubin), str(spec.kernel.path))
    bound = {}
    for i, (name, wanted) in enumerate(spec.globals.items()):
        pointer, size = driver.module_global(module, symbols[name])
        _check_size(wanted, size, f"globals.{name}", spec.global_lines.get(name))
        values = input_values(wanted, len(spec.buffers) + i)   # its own random stream
        bound[name] = DeviceGlobal(wanted, values, pointer, size)
    return bound


def write(bound: dict[str, DeviceGlobal], stream: int) -> list:
    """Queue each global's copy on `stream`; returns the host arrays, to keep
    alive until the stream is synchronised."""
    kept = []
    for g in bound.values():
        array = g.values.whole()
        driver.copy_to_device_async(g.pointer, array.ctypes.data, array.nbytes, stream)
        kept.append(array)
    return kept


def read(g: DeviceGlobal):
    """The global's value after the launch (its entry's shape and dtype)."""
    import numpy as np
    out = np.empty(g.spec.shape, dtype=g.spec.dtype.numpy_dtype())
    driver.copy_to_host(out, g.pointer)
    return out
