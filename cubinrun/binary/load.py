"""The spec's kernel as a cubin: read, compiled (NVRTC for `source:`,
nvJitLink for `ptx:`, both cached) or taken from a Triton entry, then parsed
so that the spec can be checked against what the binary really holds."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError
from ..files import read_bounded
from ..limits import MAX_BINARY_BYTES, MAX_PTX_BYTES, MAX_SOURCE_BYTES
from ..specfile import Spec
from .cubin import CubinInfo, KernelInfo
from .cubin_cache import read_cubin_cached


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
    if kind in ("source", "ptx"):
        cubin, origin = _compile(spec, arch, field)
    else:
        cubin_path = path.with_suffix(".cubin") if kind == "triton" else path
        cubin, origin = _read(cubin_path, field), str(cubin_path)
    try:
        info = read_cubin_cached(cubin, origin)
    except SpecError as exc:
        raise exc.located(field=field) from None
    try:
        kernel = info.kernel(spec.kernel.name)
    except SpecError as exc:
        raise exc.located(field="kernel.name") from None
    return Binary(cubin, info, kernel, origin)


class Binaries:
    """load_binary, once per kernel file (as it is now), kind, name, options and
    arch: what the runs of one session or one dry run share, so a sweep's
    points compile, read and parse their binary once."""

    def __init__(self):
        self._binaries: dict[tuple, Binary] = {}

    def load(self, spec: Spec, arch: str | None) -> Binary:
        kernel = spec.kernel
        try:
            stat = kernel.path.stat()
            version = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            version = None                  # load_binary says what is wrong
        key = (kernel.kind, str(kernel.path), version, kernel.name, kernel.options, arch)
        if version is None or key not in self._binaries:
            self._binaries[key] = load_binary(spec, arch)
        return self._binaries[key]


def _read(path: Path, field: str, limit: int = MAX_BINARY_BYTES, what: str = "cubin") -> bytes:
    try:
        return read_bounded(path, limit, what)
    except SpecError as exc:
        raise exc.located(field=field) from None


def _compile(spec: Spec, arch: str | None, field: str) -> tuple[bytes, str]:
    from . import nvrtc
    arch = arch or spec.kernel.arch
    if arch is None:
        raise SpecError("compiling needs a target: run on a GPU, pass --arch or set "
                        "kernel.arch in the spec (e.g. sm_90)", field=field)
    path = spec.kernel.path
    if spec.kernel.kind == "ptx":
        ptx = _read(path, field, MAX_PTX_BYTES, "PTX")
        cached = nvrtc.cached_compile_ptx(ptx, arch=arch, name=path.name)
    else:
        source = _read(path, field, MAX_SOURCE_BYTES, "CUDA source")
        cached = nvrtc.cached_compile(source, name=str(path), arch=arch,
                                      options=spec.kernel.options)
    origin = str(cached.path) if cached.path else f"{path} compiled for {arch} (not cached)"
    return cached.compiled.cubin, origin
