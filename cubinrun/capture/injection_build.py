"""The CUPTI injection library (injection_base.c, injection.c,
injection_globals.c, injection_libraries.c, injection_loaded.c,
injection_graphs.c and injection_start.c, one translation unit), compiled on first use with the C compiler launchers are
built with (launcher/compilers.py) and kept in the launcher cache, checked by
digest as a launcher is; and the CUPTI library it loads into the program.

Headers and libcupti come from the `capture` extra's wheels (nvidia-cuda-cupti
for cupti.h, nvidia-cuda-crt for the crt/ headers cupti.h includes), found
through cuda.pathfinder, else from a CUDA toolkit ($CUDA_HOME, /usr/local/cuda).
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from importlib import resources
from pathlib import Path

from ..cache import trust
from ..cache.folders import prune_now_and_then
from ..cache.launcher_entry import store, verified_module
from ..errors import BuildError
from ..launcher.build import find_cuda_include
from ..launcher.compilers import find_compiler
from ..launcher.tool_runs import run_tool
from ..platform import WINDOWS

ENTRY = "cubinrun_capture_injection"
INJECTION_PARTS = ("injection_base.c", "injection.c", "injection_globals.c",
                   "injection_libraries.c", "injection_loaded.c", "injection_graphs.c",
                   "injection_start.c")
INSTALL_HINT = "pip install 'cubinrun[capture]'"


def injection_source() -> str:
    """The library's one translation unit, its parts in order."""
    package = resources.files("cubinrun.capture")
    return "\n".join(package.joinpath(name).read_text() for name in INJECTION_PARTS)


def header_dirs() -> list[str]:
    """Folders holding cupti.h, crt/host_defines.h and cuda.h, in that order of need."""
    wanted = ("cupti.h", os.path.join("crt", "host_defines.h"), "cuda.h")
    candidates = [find_cuda_include()] + [
        os.path.join(root, sub) for root in _toolkit_roots()
        for sub in ("include", os.path.join("extras", "CUPTI", "include"), _TARGET_INCLUDE)]
    found = []
    for name in wanted:
        folder = next((c for c in candidates if os.path.isfile(os.path.join(c, name))), None)
        if folder is None:
            raise BuildError(f"{name} not found (for the CUPTI injection library): "
                             f"{INSTALL_HINT}, or set CUDA_HOME to a CUDA toolkit")
        if folder not in found:
            found.append(folder)
    return found


def cupti_library() -> str:
    """libcupti's path: $CUBINRUN_CUPTI, else the wheel's (cuda.pathfinder), else a
    toolkit's. (A CUPTI newer than the driver does not attach: the variable picks
    another.)"""
    if chosen := os.environ.get("CUBINRUN_CUPTI", "").strip():
        if not os.path.isfile(chosen):
            raise BuildError(f"CUBINRUN_CUPTI={chosen}: no such file")
        return chosen
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        return load_nvidia_dynamic_lib("cupti").abs_path
    except Exception:
        pass
    for root in _toolkit_roots():
        for sub in ("lib64", "lib", os.path.join("extras", "CUPTI", "lib64"), _TARGET_LIB):
            folder = Path(root) / sub
            for path in sorted(folder.glob("libcupti.so*")) if folder.is_dir() else ():
                return str(path)
    raise BuildError(f"libcupti not found: {INSTALL_HINT}, or set CUDA_HOME to a CUDA toolkit")


def build_injection() -> Path:
    """The library's path in the cache, compiled when missing or damaged."""
    if WINDOWS:
        raise BuildError("capturing CUDA launches through CUPTI is Linux only "
                         "(CUDA_INJECTION64_PATH loads a shared object)")
    compiler = find_compiler()
    source = injection_source()
    includes = header_dirs()
    digests = [hashlib.sha256(Path(d, "cupti.h").read_bytes()).hexdigest()
               for d in includes if os.path.isfile(os.path.join(d, "cupti.h"))]
    key = hashlib.sha256("\0".join([source, *compiler.identity(), *compiler.flags(),
                                    *includes, *digests]).encode()).hexdigest()
    prefix = trust.folder("launchers", create=True) / f"{ENTRY}.{key[:24]}"
    cached = verified_module(prefix)
    if cached is not None:
        return cached
    with tempfile.TemporaryDirectory(prefix="cubinrun-build-") as workdir:
        source_file = os.path.join(workdir, "injection.c")
        Path(source_file).write_text(source)
        built = os.path.join(workdir, "injection.so")
        command = compiler.shared_library(source_file, built, includes, workdir,
                                          link_python=False)
        code, log = run_tool(command, f"the C compiler {Path(command[0]).name}",
                             "compiling the CUPTI injection library", cwd=workdir)
        if code != 0 or not os.path.isfile(built):
            raise BuildError(f"compiling the CUPTI injection library failed: "
                             f"{Path(compiler.command[0]).name} exited with {code}", log=log)
        partial = prefix.with_name(f".{prefix.name}.partial")
        Path(partial).write_bytes(Path(built).read_bytes())
    try:
        path = store(prefix, partial, ".so")
    finally:
        if partial.exists():
            partial.unlink()
    prune_now_and_then()
    return path


_TARGET_INCLUDE = os.path.join("targets", "x86_64-linux", "include")   # a toolkit's own layout
_TARGET_LIB = os.path.join("targets", "x86_64-linux", "lib")


def _toolkit_roots() -> list[str]:
    """$CUDA_HOME, $CUDA_PATH, the toolkit of the nvcc on PATH, /usr/local/cuda."""
    import shutil
    nvcc = shutil.which("nvcc")
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             str(Path(nvcc).resolve().parent.parent) if nvcc else None, "/usr/local/cuda"]
    return [r for r in dict.fromkeys(roots) if r and os.path.isdir(r)]
