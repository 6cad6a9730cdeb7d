"""Commands on binaries: `inspect` a cubin, `compile` CUDA C++ to one, and
`init` a starter spec from one."""
from __future__ import annotations

import sys

import click

from .common import console, current_arch, existing, force_option, json_option, write_output


@click.command()
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--kernel", "kernel_name", metavar="NAME", help="Only this kernel.")
@json_option
def inspect(path, kernel_name, as_json):
    """Show what a cubin (or a fatbin's cubins) holds: arch, kernels, parameters,
    module globals."""
    from dataclasses import replace

    from ..binary.cubin import load_cubins, load_module_globals
    infos = load_cubins(existing(path))
    variables = load_module_globals(path)
    if kernel_name:
        infos = [replace(info, kernels=[info.kernel(kernel_name)]) for info in infos]
    if as_json:
        from .report import print_json
        documents = [{**info.to_json(), "globals": [{"name": name, "size": size}
                                                    for name, size in found.items()]}
                     for info, found in zip(infos, variables)]
        print_json(documents[0] if len(documents) == 1 else {"cubins": documents})
    else:
        from .inspect_view import render_inspect
        out = console()
        for info, found in zip(infos, variables):
            render_inspect(info, out, found)


@click.command("compile")
@click.argument("source", metavar="SRC.cu", type=click.Path(dir_okay=False))
@click.option("--arch", metavar="SM", help="Target, e.g. sm_90 (default: the current device).")
@click.option("-o", "--output", metavar="FILE", type=click.Path(),
              help="Output cubin (default: SRC with .<arch>.cubin).")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Define a macro.")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Add an include folder.")
@click.option("--option", "options", multiple=True, metavar="FLAG",
              help="Pass a flag to NVRTC (repeatable), e.g. --option=-lineinfo.")
@click.option("--name-expression", "name_expressions", multiple=True, metavar="EXPR",
              help="A template instantiation to compile and name, e.g. 'kern<float>'.")
@force_option
def compile_command(source, arch, output, defines, include_dirs, options, name_expressions,
                    force):
    """Compile CUDA C++ to a cubin with NVRTC (no GPU needed with --arch)."""
    from pathlib import Path

    from ..binary.nvrtc import compile_cuda
    path = existing(source)
    arch = arch or current_arch()
    macros = dict(d.split("=", 1) if "=" in d else (d, None) for d in defines)
    from ..files import check_output, read_bounded, write_output as write_file
    from ..limits import MAX_SOURCE_BYTES
    source_bytes = read_bounded(path, MAX_SOURCE_BYTES, "CUDA source")
    out = Path(output) if output is not None else path.with_suffix(f".{arch}.cubin")
    check_output(out, force)             # said before compiling, not after
    compiled = compile_cuda(source_bytes, name=str(path), arch=arch, options=options,
                            defines=macros, include_dirs=include_dirs,
                            name_expressions=name_expressions)
    if compiled.log.strip():
        sys.stderr.write(compiled.log.rstrip() + "\n")
    for expression, lowered in compiled.lowered_names.items():
        sys.stderr.write(f"{expression} -> {lowered}\n")
    write_file(out, compiled.cubin, force)
    sys.stderr.write(f"wrote {out} ({len(compiled.cubin)} bytes, {arch})\n")


@click.command()
@click.argument("path", metavar="FILE.cubin", type=click.Path(dir_okay=False))
@click.option("--kernel", "kernel_name", metavar="NAME", help="Which kernel (default: the only one).")
@click.option("-o", "--output", metavar="FILE", type=click.Path(),
              help="Write the spec to a file.")
@force_option
def init(path, kernel_name, output, force):
    """Write a starter spec from what a cubin says (types are guesses: see the comments)."""
    from pathlib import Path

    from ..binary.cubin import load_cubin
    from .starter import pick_kernel, starter_spec
    cubin = existing(path)
    if cubin.suffix in (".cu", ".cuh"):
        from ..errors import UsageError
        built = cubin.with_suffix(".cubin").name
        raise UsageError(f"{path} is CUDA source; init reads a cubin: compile it first "
                         f"(cubinrun compile {path} --arch sm_90 -o {built}), then "
                         f"cubinrun init {built}")
    info = load_cubin(cubin)
    target = Path(output) if output is not None else None
    text = starter_spec(info, pick_kernel(info, kernel_name), cubin,
                        target.parent if target else Path.cwd())
    if target is not None:
        write_output(output, text, force)
    else:
        sys.stdout.write(text)
