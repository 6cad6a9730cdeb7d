"""The spec's kernel as a cubin: read, compiled (NVRTC or nvcc for `source:`,
nvJitLink for `ptx:`, all cached) or taken from a Triton entry, then parsed
so that the spec can be checked against what the binary really holds; the
kernel is found by its name as written in C++ (names.py)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import BuildError, CubinrunError, SpecError, excerpt, shorten
from ..files import read_bounded
from ..limits import MAX_BINARY_BYTES, MAX_PTX_BYTES, MAX_SOURCE_BYTES
from ..specfile import Spec
from .cubin import CubinInfo, KernelInfo
from .cubin_cache import read_cubin_cached
from .names import kernel_of


@dataclass(frozen=True)
class Binary:
    cubin: bytes
    info: CubinInfo
    kernel: KernelInfo
    origin: str                    # where the cubin came from, for people


def load_binary(spec: Spec, arch: str | None) -> Binary:
    """`arch` (e.g. "sm_90") is needed only to compile `source:` and `ptx:` kernels."""
    kind, path = spec.kernel.kind, spec.kernel.path
    field = f"kernel.{kind}"
    symbol = None
    if kind in ("source", "ptx"):
        cubin, origin, symbol = _compile(spec, arch, field)
    else:
        cubin_path = path.with_suffix(".cubin") if kind == "triton" else path
        cubin, origin = _read(cubin_path, field), str(cubin_path)
    try:
        info = read_cubin_cached(cubin, origin)
    except SpecError as exc:
        raise exc.located(field=field) from None
    try:
        # Messages name the spec's file (the source), never a cache path.
        kernel = kernel_of(info, symbol or spec.kernel.name, where=str(path))
    except SpecError as exc:
        hint = "" if "template" in str(exc) else _template_hint(spec)
        raise SpecError(str(exc) + hint, field="kernel.name") from None
    return Binary(cubin, info, kernel, origin)


def _template_hint(spec: Spec) -> str:
    """A plain name of a template kernel finds no symbol: say how to name one."""
    from .names import declared_templates, parse_name
    name = spec.kernel.name
    parsed = parse_name(name) if name else None
    if spec.kernel.kind != "source" or parsed is None or parsed.template is not None:
        return ""
    try:
        source = read_bounded(spec.kernel.path, MAX_SOURCE_BYTES, "CUDA source")
    except SpecError:
        return ""
    if parsed.base.split("::")[-1] not in declared_templates(source):
        return ""
    return (f"; {parsed.base} is a template: name an instance, such as "
            f"\"{parsed.base}<ARGS>\"")


class Binaries:
    """load_binary, once per kernel file (as it is now), kernel entry (kind,
    name, options, include folders, compiler) and arch: what the runs of one
    session or one dry run share, so a sweep's points compile, read and parse
    their binary once."""

    def __init__(self):
        self._binaries: dict[tuple, Binary] = {}

    def load(self, spec: Spec, arch: str | None) -> Binary:
        kernel = spec.kernel
        try:
            stat = kernel.path.stat()
            version = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            version = None                  # load_binary says what is wrong
        key = (kernel, version, arch)
        if version is None or key not in self._binaries:
            self._binaries[key] = load_binary(spec, arch)
        return self._binaries[key]


def _read(path: Path, field: str, limit: int = MAX_BINARY_BYTES, what: str = "cubin") -> bytes:
    try:
        return read_bounded(path, limit, what)
    except SpecError as exc:
        raise exc.located(field=field) from None


def _compile(spec: Spec, arch: str | None, field: str) -> tuple[bytes, str, str | None]:
    """(cubin, where it is, the kernel's symbol when the compiler named it)."""
    from . import nvrtc
    arch = arch or spec.kernel.arch
    if arch is None:
        raise SpecError("compiling needs a target: run on a GPU, pass --arch or set "
                        "kernel.arch in the spec (e.g. sm_90)", field=field)
    path = spec.kernel.path
    symbol = None
    if spec.kernel.kind == "ptx":
        ptx = _read(path, field, MAX_PTX_BYTES, "PTX")
        cached = nvrtc.cached_compile_ptx(ptx, arch=arch, name=path.name)
    elif spec.kernel.compiler == "nvcc":
        from .nvcc import cached_compile_nvcc
        source = _read(path, field, MAX_SOURCE_BYTES, "CUDA source")
        cached = cached_compile_nvcc(source, path=path, arch=arch, options=spec.kernel.options,
                                     include_dirs=spec.kernel.include)
    else:
        source = _read(path, field, MAX_SOURCE_BYTES, "CUDA source")
        cached, symbol = _compile_named(spec, source, arch)
    origin = str(cached.path) if cached.path else f"{path} compiled for {arch} (not cached)"
    return cached.compiled.cubin, origin, symbol


def _compile_named(spec: Spec, source: bytes, arch: str):
    """NVRTC's build, given kernel.name as a name expression where it is a template
    instance or a full signature (names.py), and the symbol NVRTC lowered it to."""
    from . import nvrtc
    from .names import name_expression
    kernel = spec.kernel
    expression = name_expression(kernel.name) if kernel.name else None

    def build(expressions):
        return nvrtc.cached_compile(source, name=str(kernel.path), arch=arch,
                                    options=kernel.options, include_dirs=kernel.include,
                                    name_expressions=expressions)
    if expression is None:
        return build([]), None
    try:
        cached = build([expression])
    except BuildError as failed:
        raise _unresolved(kernel, source, failed, lambda: build([])) from None
    return cached, cached.compiled.lowered_names[expression]


def _unresolved(kernel, source: bytes, failed: BuildError, build_plain) -> CubinrunError:
    """Why NVRTC failed with the name expression: the source itself (the build
    error as it is), or the name (exit 2, listing the kernels the source has)."""
    from .names import declared_templates, listed_names
    try:
        plain = build_plain()
    except BuildError:
        return failed                        # the source does not compile without it either
    info = read_cubin_cached(plain.compiled.cubin, str(kernel.path))
    why = next((line.split("error:", 1)[1].strip() for line in failed.log.splitlines()
                if "error:" in line), "")
    templates = declared_templates(source)
    also = f"; templates: {', '.join(templates)}" if templates else ""
    return SpecError(f"{kernel.path} has no kernel {excerpt(kernel.name)} (NVRTC: "
                     f"{shorten(why, 160) if why else 'cannot resolve it'}); it has "
                     f"{listed_names(info.kernels)}{also}",
                     field="kernel.name")
