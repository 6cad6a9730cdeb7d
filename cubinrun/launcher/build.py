"""Compile a launcher's C source into a CPython extension, cached on disk.

The cache key covers everything that changes the binary: the source, the
compiler (its resolved path, size and mtime: running it for a version would
cost start-up time), the flags, the Python ABI and the platform. Entries are
written under a temporary name and renamed, so a process never imports a
half-written file; an entry that is truncated or does not import is rebuilt
once. Loaded modules are also kept for the life of the process.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import struct
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Sequence

from ..cache import cache_root, mark_used, prune_now_and_then
from ..errors import BuildError
from .codegen import generate_source, module_name_for
from .compilers import Compiler, find_compiler

_loaded: dict[Path, ModuleType] = {}
_by_signature: dict[tuple[tuple[str, ...], int], ModuleType] = {}


def find_python_include() -> str:
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        raise BuildError(f"Python.h not found in {include}: install the Python development "
                         "headers (e.g. python3-dev)")
    return include


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
    its stat standing in for its version, its command line) and the Python ABI."""
    parts = [source, *compiler.identity(), *compiler.flags(),
             sys.implementation.cache_tag or "",
             sysconfig.get_config_var("SOABI") or "", _ext_suffix(), sysconfig.get_platform()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def build_launcher(source: str, module_name: str) -> ModuleType:
    """Compile (or reuse) and import the launcher; BuildError if that fails."""
    compiler = find_compiler()
    key = cache_key(source, compiler)
    path = cache_root() / "launchers" / f"{module_name}.{key[:24]}{_ext_suffix()}"
    module = _loaded.get(path) or _import_cached(module_name, path)
    if module is None:
        _compile(source, module_name, compiler, path)
        prune_now_and_then()
        try:
            module = _import(module_name, path)
        except ImportError as e:
            raise BuildError(f"the launcher built at {path} does not import: {e}") from None
    elif path not in _loaded:
        mark_used(path)                 # a hit on disk: pruning goes by the last use
    _loaded[path] = module
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
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _import_cached(module_name: str, path: Path) -> ModuleType | None:
    """The cache entry, imported; None when there is none or it is damaged (then deleted)."""
    if not path.exists():
        return None
    try:
        if _is_whole_elf(path):
            return _import(module_name, path)
    except (ImportError, OSError):
        pass
    try:
        path.unlink(missing_ok=True)
    except PermissionError:     # loaded by another process on Windows: _publish keeps it
        pass
    return None


def _is_whole_elf(path: Path) -> bool:
    """Whether the file reaches the end of its section header table, which the
    linker writes last. A truncated library must not reach dlopen: touching
    its missing pages kills the process with SIGBUS."""
    with open(path, "rb") as f:
        header = f.read(64)
        size = os.fstat(f.fileno()).st_size
    if len(header) < 64 or header[:5] != b"\x7fELF\x02":  # ELF64, as every CUDA host is
        return False
    order = "<" if header[5] == 1 else ">"
    (section_headers,) = struct.unpack_from(order + "Q", header, 0x28)
    entry_size, count = struct.unpack_from(order + "HH", header, 0x3A)
    return section_headers + entry_size * count == size


def _import(module_name: str, path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(module_name, str(path))
    spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _compile(source: str, module_name: str, compiler: Compiler, path: Path) -> None:
    import subprocess  # only on a cache miss: start-up time matters on a hit
    import tempfile

    includes = [find_python_include(), find_cuda_include()]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(fd)
    # The source goes in a file (cl.exe reads no stdin); the scratch folder also
    # takes what MSVC and TinyCC write besides the library.
    with tempfile.TemporaryDirectory(prefix="cubinrun-build-") as workdir:
        source_file = os.path.join(workdir, f"{module_name}.c")
        with open(source_file, "w") as f:
            f.write(source)
        try:
            command = compiler.shared_library(source_file, partial, includes, workdir)
            try:
                done = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
            except OSError as e:
                raise BuildError(f"cannot run the C compiler {compiler.command[0]}: "
                                 f"{e.strerror}") from None
            if done.returncode != 0:
                raise BuildError(f"compiling launcher {module_name} failed: "
                                 f"{Path(compiler.command[0]).name} exited with "
                                 f"{done.returncode}", log=done.stderr + done.stdout)
            _publish(partial, path)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)


def _publish(partial: str, path: Path) -> None:
    """Move the new build into place. On Windows a launcher that another process
    has loaded cannot be replaced; it was built from the same key, so it stays."""
    try:
        os.replace(partial, path)
    except PermissionError:
        if not path.exists():
            raise
