"""The spec's kernel as a cubin: read, compiled (NVRTC for `source:`,
nvJitLink for `ptx:`, both cached) or taken from a Triton entry, then parsed
so that the spec can be checked against what the binary really holds."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import SpecError
from ..spec import Spec
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


def _read(path: Path, field: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read {path}: {exc.strerror}", field=field) from None


def _compile(spec: Spec, arch: str | None, field: str) -> tuple[bytes, str]:
    from . import nvrtc
    arch = arch or spec.kernel.arch
    if arch is None:
        raise SpecError("compiling needs a target: run on a GPU, pass --arch or set "
                        "kernel.arch in the spec (e.g. sm_90)", field=field)
    path = spec.kernel.path
    if spec.kernel.kind == "ptx":
        cached = nvrtc.cached_compile_ptx(path.read_bytes(), arch=arch, name=path.name)
    else:
        cached = nvrtc.cached_compile(path.read_text(), name=str(path), arch=arch,
                                      options=spec.kernel.options)
    return cached.compiled.cubin, str(cached.path)
