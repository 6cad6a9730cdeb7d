"""Compile CUDA C++ and PTX to cubins with no GPU, and cache the results.

CUDA C++ goes through NVRTC (`cuda.bindings.nvrtc`, wheel nvidia-cuda-nvrtc)
with `--gpu-architecture=sm_XX`, which yields a cubin; `compute_XX` would
yield PTX only, so virtual architectures are refused.

PTX goes through nvJitLink (`cuda.bindings.nvjitlink`, wheel
nvidia-nvjitlink), not ptxas and not the driver's JIT:
- nvJitLink is a pip wheel found by cuda.pathfinder like NVRTC and needs no
  GPU or driver, so a `ptx:` spec is compiled, validated against its cubin
  (`--dry-run`, `inspect`) and cached on a CPU-only machine;
- ptxas needs a CUDA toolkit on PATH, of whatever version is installed, run
  as a subprocess;
- the driver's JIT (cuModuleLoadData on PTX) needs a GPU, leaves no cubin
  to inspect or cache, and rejects PTX whose ISA is newer than the driver,
  whereas a cubin from a newer minor toolkit still loads (CUDA minor
  version compatibility).

The cache (`cached_compile`, `cached_compile_ptx`) lives under
$CUBINRUN_CACHE_DIR, else $XDG_CACHE_HOME/cubinrun, else ~/.cache/cubinrun,
in `nvrtc/` and `nvjitlink/`. A key is the sha256 of the source bytes, every
option, define and include folder, the arch, the compiler version and the
contents of the local headers the source includes (includes.py), so editing
a header compiles again.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import BuildError, ResourceLimitError, UsageError, excerpt
from .compile_cache import CachedCompile, CompiledCuda, entry_key, lookup_entry, store_entry
from .diagnostics import first_diagnostic, way_out
from .resource_limits import ptxas_limit

# --- architectures -------------------------------------------------------

_ARCH = re.compile(r"sm_(\d{2,3})([af]?)")


def parse_arch(arch: str) -> tuple[int, str]:
    """`"sm_90a"` -> `(90, "a")`; UsageError for anything that is not a real arch."""
    m = _ARCH.fullmatch(arch)
    if m is None:
        if re.fullmatch(r"compute_\d+[af]?", arch):
            raise UsageError(f"{arch} is a virtual architecture (PTX only); give a real one "
                             f"such as {arch.replace('compute_', 'sm_')}")
        raise UsageError(f"invalid arch {excerpt(arch)}: expected sm_XX, sm_XXa or sm_XXf "
                         "(e.g. sm_90, sm_90a, sm_100f)")
    number, suffix = int(m.group(1)), m.group(2)
    if suffix == "a" and number < 90:
        raise UsageError(f"{arch}: arch-specific 'a' variants start at sm_90")
    if suffix == "f" and number < 100:
        raise UsageError(f"{arch}: family 'f' variants start at sm_100")
    return number, suffix


def arch_for_capability(major: int, minor: int) -> str:
    """The plain arch of a device: (9, 0) -> "sm_90"."""
    if major < 1 or not 0 <= minor <= 9:
        raise UsageError(f"invalid compute capability {major}.{minor}")
    return f"sm_{major}{minor}"


# --- the bindings --------------------------------------------------------


def _nvrtc():
    """cuda.bindings.nvrtc, or a BuildError saying what to install."""
    try:
        from cuda.bindings import nvrtc
        nvrtc.nvrtcVersion()        # loads libnvrtc: fails here if it is absent
    except (ImportError, RuntimeError) as exc:
        raise BuildError("NVRTC is not available: pip install nvidia-cuda-nvrtc "
                         f"(and cuda-python) ({_first_line(exc)})") from None
    return nvrtc


def _nvjitlink():
    """cuda.bindings.nvjitlink, or a BuildError saying what to install."""
    try:
        from cuda.bindings import nvjitlink
        nvjitlink.version()         # loads libnvJitLink: fails here if it is absent
    except (ImportError, RuntimeError) as exc:
        raise BuildError("nvJitLink is not available to compile PTX: pip install "
                         f"nvidia-nvjitlink ({_first_line(exc)})") from None
    return nvjitlink


def _bytes(source: str | bytes) -> bytes:
    return source.encode() if isinstance(source, str) else bytes(source)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _check(result, call: str) -> None:
    """NVRTC calls that should not fail (a failure is a bug, not the user's)."""
    from cuda.bindings import nvrtc
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{call} failed: {result.name}")


def nvrtc_version() -> tuple[int, int]:
    result, major, minor = _nvrtc().nvrtcVersion()
    _check(result, "nvrtcVersion")
    return major, minor


def nvjitlink_version() -> tuple[int, int]:
    return tuple(_nvjitlink().version())


# --- CUDA C++ through NVRTC ----------------------------------------------


def nvrtc_options(*, name: str, arch: str, options: Sequence[str] = (),
                  defines: Mapping[str, str | None] = {},
                  include_dirs: Sequence[str | os.PathLike] = ()) -> list[str]:
    """The full NVRTC command line: arch, the caller's flags, -D, include paths."""
    parse_arch(arch)
    for option in options:
        if re.match(r"-(-gpu-architecture|arch)\b", option):
            raise UsageError(f"option {excerpt(option)}: give the arch through --arch, not options")
    args = [f"--gpu-architecture={arch}", *options]
    args += [f"-D{key}" if value is None else f"-D{key}={value}"
             for key, value in sorted(defines.items())]
    # The source's own folder, then CCCL's and the runtime's headers.
    from .includes import toolkit_include_dirs
    folders = [*map(str, include_dirs), str(Path(name).resolve().parent),
               *toolkit_include_dirs()]
    args += [f"--include-path={folder}" for folder in folders]
    return args


def compile_cuda(source: str | bytes, *, name: str, arch: str, options: Sequence[str] = (),
                 defines: Mapping[str, str | None] = {},
                 include_dirs: Sequence[str | os.PathLike] = (),
                 name_expressions: Sequence[str] = ()) -> CompiledCuda:
    """Compile `source` (named `name`, its path, in messages) to a cubin for `arch`.

    Bytes are passed to NVRTC as they are: C++ comments and strings may hold
    bytes that are not UTF-8 (a Latin-1 comment), which NVRTC accepts."""
    args = nvrtc_options(name=name, arch=arch, options=options, defines=defines,
                         include_dirs=include_dirs)
    nvrtc = _nvrtc()
    _check_nvrtc_supports(nvrtc, arch)
    result, prog = nvrtc.nvrtcCreateProgram(_bytes(source), name.encode(), 0, [], [])
    _check(result, "nvrtcCreateProgram")
    try:
        for expression in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, expression.encode())[0],
                   "nvrtcAddNameExpression")
        encoded = [a.encode() for a in args]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _program_log(nvrtc, prog)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            from .includes import toolkit_include_dirs
            message = (f"NVRTC failed to compile {name} for {arch}: "
                       f"{_reason(log, toolkit_include_dirs())}{way_out(log)}")
            if reason := ptxas_limit(log):
                raise ResourceLimitError(message, reason, log)
            raise BuildError(message, log)
        result, size = nvrtc.nvrtcGetCUBINSize(prog)
        _check(result, "nvrtcGetCUBINSize")
        cubin = bytearray(size)
        _check(nvrtc.nvrtcGetCUBIN(prog, cubin)[0], "nvrtcGetCUBIN")
        lowered = {}
        for expression in name_expressions:
            result, symbol = nvrtc.nvrtcGetLoweredName(prog, expression.encode())
            _check(result, "nvrtcGetLoweredName")
            lowered[expression] = symbol.decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return CompiledCuda(bytes(cubin), log, lowered, arch)


def _check_nvrtc_supports(nvrtc, arch: str) -> None:
    result, supported = nvrtc.nvrtcGetSupportedArchs()
    _check(result, "nvrtcGetSupportedArchs")
    if parse_arch(arch)[0] not in supported:
        major, minor = nvrtc_version()
        raise UsageError(f"{arch} is not supported by NVRTC {major}.{minor}; it supports "
                         + ", ".join(f"sm_{n}" for n in supported))


def _program_log(nvrtc, prog) -> str:
    result, size = nvrtc.nvrtcGetProgramLogSize(prog)
    _check(result, "nvrtcGetProgramLogSize")
    buf = bytearray(size)
    _check(nvrtc.nvrtcGetProgramLog(prog, buf)[0], "nvrtcGetProgramLog")
    return bytes(buf).rstrip(b"\0").decode(errors="replace").strip()


def _reason(log: str, include_dirs) -> str:
    """"1 error: k.cu:3: expected a \";\"": how many (NVRTC's closing line), then the first."""
    count = re.search(r"(\d+ (?:catastrophic )?errors?) detected", log)
    first = first_diagnostic(log, include_dirs)
    if count and first:
        return f"{count.group(1)}: {first}"
    return count.group(1) if count else first or (log.splitlines() or ["no log"])[0]


def compile_ptx(ptx: bytes | str, *, arch: str, name: str = "kernel.ptx") -> bytes:
    """Assemble PTX into a cubin for `arch` with nvJitLink (no GPU needed)."""
    return _link_ptx(ptx, arch=arch, name=name)[0]


def _link_ptx(ptx: bytes | str, *, arch: str, name: str) -> tuple[bytes, str]:
    parse_arch(arch)
    data = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
    nvjitlink = _nvjitlink()
    try:
        handle = nvjitlink.create(1, [f"-arch={arch}"])
    except nvjitlink.nvJitLinkError:
        major, minor = nvjitlink_version()
        raise UsageError(f"{arch} is not supported by nvJitLink {major}.{minor}") from None
    try:
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), name)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            log = _jitlink_log(nvjitlink.get_error_log_size, nvjitlink.get_error_log, handle)
            # ptxas's own message comes first, nvJitLink's summary last.
            first = (log.splitlines() or [str(exc)])[0]
            message = f"nvJitLink failed to compile {name} for {arch}: {first}"
            if reason := ptxas_limit(log):
                raise ResourceLimitError(message, reason, log) from None
            raise BuildError(message, log) from None
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        log = _jitlink_log(nvjitlink.get_info_log_size, nvjitlink.get_info_log, handle)
    finally:
        nvjitlink.destroy(handle)
    return bytes(cubin), log


def _jitlink_log(get_size, get_log, handle) -> str:
    buf = bytearray(get_size(handle))
    if buf:
        get_log(handle, buf)
    return bytes(buf).rstrip(b"\0").decode(errors="replace").strip()


# --- the cache -----------------------------------------------------------


def cached_compile(source: str | bytes, *, name: str, arch: str, options: Sequence[str] = (),
                   defines: Mapping[str, str | None] = {},
                   include_dirs: Sequence[str | os.PathLike] = (),
                   name_expressions: Sequence[str] = (), refresh: bool = False) -> CachedCompile:
    """`compile_cuda` through the cache; `refresh` compiles again and overwrites."""
    from .includes import headers_digest, include_dirs_in
    args = nvrtc_options(name=name, arch=arch, options=options, defines=defines,
                         include_dirs=include_dirs)
    user_folders = [*map(str, include_dirs), *include_dirs_in(options)]
    key = entry_key(_bytes(source), tool="nvrtc", version=nvrtc_version(), arch=arch, name=name,
                    options=args, name_expressions=list(name_expressions),
                    headers=headers_digest(_bytes(source), Path(name), user_folders))
    if not refresh and (found := lookup_entry("nvrtc", key)):
        return found
    compiled = compile_cuda(source, name=name, arch=arch, options=options, defines=defines,
                            include_dirs=include_dirs, name_expressions=name_expressions)
    return store_entry("nvrtc", key, compiled)


def cached_compile_ptx(ptx: bytes | str, *, arch: str, name: str = "kernel.ptx",
                       refresh: bool = False) -> CachedCompile:
    """`compile_ptx` through the cache (`nvjitlink/`), keeping nvJitLink's info log."""
    data = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
    parse_arch(arch)
    key = entry_key(data, tool="nvjitlink", version=nvjitlink_version(), arch=arch)
    if not refresh and (found := lookup_entry("nvjitlink", key)):
        return found
    cubin, log = _link_ptx(data, arch=arch, name=name)
    return store_entry("nvjitlink", key, CompiledCuda(cubin, log, {}, arch))
