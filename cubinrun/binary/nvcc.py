"""Compile a whole .cu file, host code included, to a cubin with nvcc.

cuda-samples keep kernels and host code (main, cudaMalloc, printf) in one
file, which NVRTC refuses. `nvcc -cubin -arch=sm_XX` compiles its device
side for one target; it parses the host code too, so it needs a host
compiler (gcc or clang on Linux, cl.exe on Windows), and it instantiates
every template the host code names, which NVRTC cannot see.

nvcc is looked for in $CUDA_HOME (or $CUDA_PATH), then PATH, then the
`nvidia-cuda-nvcc` wheel (the `nvcc` extra), through cuda.pathfinder, then
/usr/local/cuda. The
run is time-limited like the C compiler's (launcher/tool_runs.py). Results
are cached in `nvcc/` under the cache root, keyed by the source, its local
headers, the options, the include folders, nvcc's version and the arch.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from ..errors import BuildError, ResourceLimitError, UsageError, excerpt
from .compile_cache import CachedCompile, CompiledCuda, entry_key, lookup_entry, store_entry
from .diagnostics import first_diagnostic
from .nvrtc import parse_arch
from .resource_limits import ptxas_limit

INSTALL_HINT = "pip install 'cubinrun[nvcc]' (or install a CUDA toolkit, or set CUDA_HOME)"


def find_nvcc() -> str:
    """nvcc's path: $CUDA_HOME/bin, PATH, then the nvidia-cuda-nvcc wheel."""
    executable = "nvcc.exe" if os.name == "nt" else "nvcc"
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(variable)
        if home and (candidate := Path(home) / "bin" / executable).is_file():
            return str(candidate)
    if found := shutil.which("nvcc"):
        return found
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
        found = find_nvidia_binary_utility("nvcc")
    except (ImportError, RuntimeError, ValueError):
        found = None
    if found:
        return found
    if os.name != "nt" and Path("/usr/local/cuda/bin/nvcc").is_file():     # a toolkit off PATH
        return "/usr/local/cuda/bin/nvcc"
    raise BuildError(f"kernel.compiler nvcc: no nvcc found: {INSTALL_HINT}")


@functools.lru_cache(maxsize=8)
def nvcc_version(nvcc: str) -> str:
    """The last line of `nvcc --version` ("Build cuda_13.0.r13.0/compiler.36424714_0")."""
    from ..launcher.tool_runs import run_tool
    status, output = run_tool([nvcc, "--version"], f"nvcc ({nvcc})", "reporting its version")
    if status != 0:
        raise BuildError(f"{nvcc} --version failed: {_first_error(output)}", output)
    return (output.strip().splitlines() or ["unknown"])[-1]


def nvcc_command(nvcc: str, source: Path, output: Path, *, arch: str,
                 options: Sequence[str] = (), include_dirs: Sequence[str | os.PathLike] = ()
                 ) -> list[str]:
    parse_arch(arch)
    for option in options:
        if re.match(r"-(arch|gencode|code|o|cubin|ptx|fatbin|c)\b|--(gpu-architecture|gpu-code|"
                    r"generate-code|output-file)\b", option):
            raise UsageError(f"option {excerpt(option)}: cubinrun chooses nvcc's target and "
                             "output (give the arch through --arch or kernel.arch)")
    return [nvcc, "-cubin", f"-arch={arch}", *options,
            *(f"-I{Path(folder).resolve()}" for folder in include_dirs), str(source), "-o",
            str(output)]


def cached_compile_nvcc(source: bytes, *, path: Path, arch: str, options: Sequence[str] = (),
                        include_dirs: Sequence[str | os.PathLike] = (),
                        refresh: bool = False) -> CachedCompile:
    """The cubin nvcc makes of the file at `path` (whose bytes are `source`) for `arch`."""
    from .includes import headers_digest, include_dirs_in
    nvcc = find_nvcc()
    folders = [*map(str, include_dirs), *include_dirs_in(options)]
    key = entry_key(source, tool="nvcc", version=nvcc_version(nvcc), arch=arch,
                    name=str(path), options=list(options), include=list(map(str, include_dirs)),
                    headers=headers_digest(source, path, folders))
    if not refresh and (found := lookup_entry("nvcc", key)):
        return found
    return store_entry("nvcc", key, compile_nvcc(nvcc, path, arch=arch, options=options,
                                                 include_dirs=include_dirs))


def compile_nvcc(nvcc: str, path: Path, *, arch: str, options: Sequence[str] = (),
                 include_dirs: Sequence[str | os.PathLike] = ()) -> CompiledCuda:
    from ..launcher.tool_runs import run_tool
    from ..limits import MAX_BINARY_BYTES
    with tempfile.TemporaryDirectory(prefix="cubinrun-nvcc-") as scratch:
        output = Path(scratch) / "kernel.cubin"
        command = nvcc_command(nvcc, path.resolve(), output, arch=arch, options=options,
                               include_dirs=include_dirs)
        status, log = run_tool(command, "nvcc", f"compiling {path}")
        if status != 0:
            message = f"nvcc failed to compile {path} for {arch}: {_first_error(log)}"
            if reason := ptxas_limit(log):       # a sweep's point the kernel cannot build
                raise ResourceLimitError(message, reason, log)
            raise BuildError(message, log)
        try:
            with open(output, "rb") as f:
                cubin = f.read(MAX_BINARY_BYTES + 1)
        except OSError as exc:
            raise BuildError(f"nvcc wrote no cubin for {path}: {exc.strerror}", log) from None
        if len(cubin) > MAX_BINARY_BYTES:
            raise BuildError(f"nvcc made a cubin of {path} larger than "
                             f"{MAX_BINARY_BYTES >> 20} MiB", log)
    return CompiledCuda(cubin, log.strip(), {}, arch)


def _first_error(log: str) -> str:
    """The first diagnostic (`FILE:LINE: MESSAGE`), else the first line that
    says `error`, else the first line."""
    from .includes import toolkit_include_dirs
    if first := first_diagnostic(log, toolkit_include_dirs()):
        return first
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[0] if lines else
                "no output")
