"""Compile a launcher's C source into a CPython extension, cached on disk.

The cache key covers everything that changes the binary: the source, the
compiler (its resolved path, size and mtime: running it for a version would
cost start-up time), the flags, the Python ABI and the platform. Entries are
written under a temporary name and renamed, so a process never imports a
half-written file; an entry whose size or digest does not match what was
written (cache_entry.py) is never imported, and one that is damaged or does
not import is rebuilt once. The compiler runs with a time limit
(tool_runs.py). Loaded modules are also kept for the life of the process.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Sequence

from ..cache import trust
from ..cache.folders import mark_used, prune_now_and_then
from ..errors import BuildError
from ..platform import WINDOWS
from ..cache.launcher_entry import store, verified_module
from .codegen import generate_source, module_name_for
from .compilers import Compiler, find_compiler
from .tool_runs import run_tool

_loaded: dict[Path, ModuleType] = {}
_by_signature: dict[tuple[tuple[str, ...], int], ModuleType] = {}


def find_cuda_include() -> str:
    """cuda.h's folder: cuda.pathfinder (wheels, conda, system), then $CUDA_HOME / $CUDA_PATH."""
    candidates = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:
        pass
    else:
        candidates.append(find_nvidia_header_directory("cudart"))
    candidates += [os.path.join(os.environ[var], "include")
                   for var in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(var)]
    for folder in candidates:
        if folder and os.path.isfile(os.path.join(folder, "cuda.h")):
            return folder
    raise BuildError("cuda.h not found: pip install nvidia-cuda-runtime, or set CUDA_HOME "
                     "to a CUDA toolkit")


def cache_key(source: str, compiler: Compiler) -> str:
    """sha256 of what shapes the binary: the source, the compiler (family, target,
    its stat standing in for its version, its options) and the Python ABI."""
    parts = [source, *compiler.identity(), *compiler.flags(), sys.implementation.cache_tag or "",
             sysconfig.get_config_var("SOABI") or "", sysconfig.get_config_var("EXT_SUFFIX") or "",
             sysconfig.get_platform()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def build_launcher(source: str, module_name: str) -> ModuleType:
    """Compile (or reuse) and import the launcher; BuildError if that fails."""
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        raise BuildError("launchers use CPython's stable ABI, which a free-threaded Python "
                         "does not have: run cubinrun with a regular CPython build")
    compiler = find_compiler()
    key = cache_key(source, compiler)
    entry = f"{module_name}.{key[:24]}"
    prefix = trust.folder("launchers") / entry
    module = _loaded.get(prefix)
    if module is None:
        module = _import_cached(module_name, prefix)
    if module is None:
        # Checked again: the lookup may have left an untrusted cache for a private folder.
        prefix = trust.folder("launchers", create=True) / entry
        try:
            path = _compile(source, module_name, compiler, prefix)
        except OSError as exc:          # the entry cannot be written there (a folder in its place)
            prefix = trust.fall_back(f"{exc.filename or prefix} cannot be written "
                                           f"({exc.strerror or exc})") / "launchers" / entry
            prefix.parent.mkdir(mode=0o700)
            path = _compile(source, module_name, compiler, prefix)
        prune_now_and_then()
        try:
            module = _import(module_name, path)
        except ImportError as e:
            raise BuildError(f"the launcher built at {path} does not import: {e}") from None
    _loaded[prefix] = module
    return module


def load_launcher(leaf_types: Sequence[str], num_scratch: int = 0) -> ModuleType:
    """The launcher module for an expanded signature: generated, built and cached."""
    signature = (tuple(leaf_types), num_scratch)
    module = _by_signature.get(signature)
    if module is None:
        name = module_name_for(leaf_types, num_scratch)
        module = build_launcher(generate_source(leaf_types, num_scratch, name), name)
        _by_signature[signature] = module
    return module


def _ext_suffix() -> str:
    """The stable ABI's suffix: the file is an abi3 module (the key still holds
    the interpreter, so each has its own entry)."""
    return ".pyd" if WINDOWS else ".abi3.so"


def _import_cached(module_name: str, prefix: Path) -> ModuleType | None:
    """The cache entry, verified and imported; None when there is none, it is
    damaged (never imported) or it does not import (then removed)."""
    path = verified_module(prefix)
    if path is None:
        return None
    try:
        module = _import(module_name, path)
    except ImportError:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    mark_used(path)                     # a hit on disk: pruning goes by the last use
    return module


def _import(module_name: str, path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(path))
    spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _compile(source: str, module_name: str, compiler: Compiler, prefix: Path) -> Path:
    """Compile in a scratch folder, copy the library into a partial file beside
    the entry, then move it into the entry. The source goes in a file (cl.exe
    reads no stdin); the scratch folder takes what toolchains write beside
    their output (TinyCC a .def, zig a .pdb and a .lib, MSVC objects), so none
    of it lands in the cache."""
    import tempfile  # only on a cache miss: start-up time matters on a hit

    includes = [find_cuda_include()]
    with tempfile.TemporaryDirectory(prefix="cubinrun-build-") as workdir:
        source_file = os.path.join(workdir, f"{module_name}.c")
        with open(source_file, "w") as f:
            f.write(source)
        built = os.path.join(workdir, module_name + _ext_suffix())
        command = compiler.shared_library(source_file, built, includes, workdir)
        returncode, log = run_tool(command, f"the C compiler {Path(command[0]).name}",
                                   f"compiling launcher {module_name}", cwd=workdir)
        if returncode != 0 or not os.path.isfile(built):
            raise BuildError(f"compiling launcher {module_name} failed: "
                             f"{Path(compiler.command[0]).name} exited with {returncode}"
                             + ("" if returncode else " but wrote no library"), log=log)
        data = Path(built).read_bytes()
    fd, partial = tempfile.mkstemp(dir=prefix.parent, prefix=f".{prefix.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return store(prefix, Path(partial), _ext_suffix())
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
