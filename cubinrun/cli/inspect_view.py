"""`cubinrun inspect` for people: a header line for the cubin, the module's
globals, then per kernel (by its C++ name, the symbol beside it) its
resources, its launch limits and a table of parameters. rich is imported when
drawing. A value the binary does not state shows as "-"."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..binary.cubin import CubinInfo, Dim3, KernelInfo


def render_inspect(info: "CubinInfo", console, variables: dict[str, int] | None = None) -> None:
    """`variables`: the module's globals and their sizes (binary.cubin.module_globals)."""
    from rich.markup import escape

    count = len(info.kernels)
    built = f"  ptxas {info.toolkit}" if info.toolkit else ""
    console.print(f"[bold]{escape(info.path or 'cubin')}[/bold]  {info.arch}  "
                  f"ELF ABI {info.abi_version}  flags {info.elf_flags:#x}{built}  "
                  f"{count} kernel{'' if count == 1 else 's'}")
    if variables:
        from ..gpu.module_globals import describe
        console.print(f"globals: {escape(describe(variables))}")
    for kernel in info.kernels:
        console.print()
        _render_kernel(kernel, console)


def _render_kernel(kernel: "KernelInfo", console) -> None:
    from rich import box
    from rich.markup import escape
    from rich.padding import Padding
    from rich.table import Table

    header = f"[bold]{escape(kernel.cxx_name)}[/bold]"
    if kernel.demangled:
        header += f"  [dim]{escape(kernel.name)}[/dim]"
    console.print(header)
    console.print(f"  registers {_value(kernel.registers)}  "
                  f"static shared {kernel.shared_static} B  "
                  f"local {_value(kernel.local)} B  "
                  f"params {kernel.param_bytes} B")
    console.print(f"  max threads {_dims(kernel.max_threads)}  "
                  f"required block {_dims(kernel.required_block)}  "
                  f"cluster {_dims(kernel.cluster)}  "
                  f"max registers {_value(kernel.max_registers)}")
    if not kernel.params:
        console.print("  no parameters")
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("ordinal", "offset", "size"):
        table.add_column(column, justify="right")
    for param in kernel.params:
        table.add_row(str(param.ordinal), str(param.offset), str(param.size))
    console.print(Padding(table, (0, 0, 0, 2), expand=False))


def _dims(values: "Dim3 | None") -> str:
    return " x ".join(str(v) for v in values) if values is not None else "-"


def _value(value: int | None) -> str:
    return "-" if value is None else str(value)
