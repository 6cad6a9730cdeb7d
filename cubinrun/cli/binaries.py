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
    """Show what a cubin (or a fatbin's cubins) holds: arch, kernels (C++ names
    demangled), parameters, module globals."""
    from dataclasses import replace

    from ..binary.cubin import load_cubins, load_module_globals
    infos = load_cubins(existing(path))
    variables = load_module_globals(path)
    if kernel_name:
        from ..binary.names import kernel_of
        infos = [replace(info, kernels=[kernel_of(info, kernel_name)]) for info in infos]
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
    _refuse_no_kernels(compiled.cubin, path, source_bytes)
    if compiled.log.strip():
        sys.stderr.write(compiled.log.rstrip() + "\n")
    for expression, lowered in compiled.lowered_names.items():
        sys.stderr.write(f"{expression} -> {lowered}\n")
    write_file(out, compiled.cubin, force)
    sys.stderr.write(f"wrote {out} ({len(compiled.cubin)} bytes, {arch})\n")


def _refuse_no_kernels(cubin: bytes, path, source: bytes,
                       flag: str = "--name-expression") -> None:
    """A cubin with no kernel (an empty source, or only templates nobody named)
    runs nothing: exit 3, saying how to name an instance (with `flag`, the
    command's own), rather than write it silently. compile and init alike."""
    from ..binary.cubin import read_cubin
    from ..binary.names import declared_templates
    from ..errors import BuildError
    if read_cubin(cubin, str(path)).kernels:
        return
    templates = declared_templates(source)
    how = (f": templates are compiled only when named, e.g. {flag} "
           f"'{templates[0]}<ARGS>' (templates: {', '.join(templates)})" if templates else "")
    raise BuildError(f"{path} compiled to no kernel{how}")


@click.command()
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--kernel", "kernel_name", metavar="NAME",
              help="Which kernel (default: the only one); for a .cu, a template instance "
                   "such as 'reduce6<float, 256, true>' is compiled.")
@click.option("--arch", metavar="SM", help="For a .cu: the target to compile for, to read "
              "the kernel (default: the current device).")
@click.option("-o", "--output", metavar="FILE", type=click.Path(),
              help="Write the spec to a file.")
@force_option
def init(path, kernel_name, arch, output, force):
    """Write a starter spec from what a cubin (or a .cu, compiled with NVRTC) says
    (types not known from a C++ signature are guesses: see the comments)."""
    from pathlib import Path

    from .starter import pick_kernel, starter_spec
    source = existing(path)
    if source.suffix == ".cu":
        kind, info = "source", _compiled_info(source, kernel_name, arch or current_arch())
    else:
        from ..binary.cubin import load_cubin
        kind, info = "cubin", load_cubin(source)
    target = Path(output) if output is not None else None
    kernel = pick_kernel(info, info.kernels[0].name if kind == "source" and kernel_name
                         else kernel_name)
    text = starter_spec(info, kernel, source, target.parent if target else Path.cwd(), kind,
                        kernel_name if kind == "source" else None, arch)
    if target is not None:
        write_output(output, text, force)
    else:
        sys.stdout.write(text)


def _compiled_info(source, kernel_name: str | None, arch: str):
    """The cubin NVRTC makes of `source` (through the cache), read; with a name
    expression for a template instance or signature, only that kernel."""
    from dataclasses import replace

    from ..binary.cubin import read_cubin
    from ..binary.names import name_expression
    from ..binary.nvrtc import cached_compile
    from ..files import read_bounded
    from ..limits import MAX_SOURCE_BYTES
    expression = name_expression(kernel_name) if kernel_name else None
    source_bytes = read_bounded(source, MAX_SOURCE_BYTES, "CUDA source")
    cached = cached_compile(source_bytes, name=str(source), arch=arch,
                            name_expressions=[expression] if expression else [])
    _refuse_no_kernels(cached.compiled.cubin, source, source_bytes, "--kernel")  # as compile
    info = read_cubin(cached.compiled.cubin, str(source))
    if kernel_name:
        symbol = cached.compiled.lowered_names.get(expression) if expression else None
        from ..binary.names import kernel_of
        info = replace(info, kernels=[kernel_of(info, symbol or kernel_name)])
    return info
