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
import shlex
import shutil
import struct
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Sequence

from ..cache import cache_root, mark_used, prune_now_and_then
from ..errors import BuildError
from .codegen import generate_source, module_name_for

# No -I for Python: template.c declares the stable ABI it uses. Only the
# module's init function is exported.
CFLAGS = ("-O2", "-shared", "-fPIC", "-fvisibility=hidden")
LIBS = ("-ldl",)  # the driver is opened with dlopen: no -lcuda

_loaded: dict[Path, ModuleType] = {}
_by_signature: dict[tuple[tuple[str, ...], int], ModuleType] = {}


def find_compiler() -> list[str]:
    """The compiler command: $CC (it may carry words, e.g. "ccache gcc"), else cc, gcc or clang."""
    if env := os.environ.get("CC", "").strip():
        words = shlex.split(env)
        path = shutil.which(words[0])
        if path is None:
            raise BuildError(f"C compiler {words[0]!r} from $CC not found")
        return [path, *words[1:]]
    for name in ("cc", "gcc", "clang"):
        if path := shutil.which(name):
            return [path]
    raise BuildError("no C compiler found (cc, gcc or clang): install one or set $CC")


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


def cache_key(source: str, compiler: Sequence[str]) -> str:
    """sha256 of what shapes the binary; the compiler's stat stands in for its version."""
    real = os.path.realpath(compiler[0])
    stat = os.stat(real)
    parts = [source, real, str(stat.st_size), str(stat.st_mtime_ns), *compiler[1:],
             *CFLAGS, *LIBS, sys.implementation.cache_tag or "",
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
    """The stable ABI's suffix: the file is an abi3 module (the key still holds
    the interpreter, so each has its own entry)."""
    return ".pyd" if os.name == "nt" else ".abi3.so"


def _import_cached(module_name: str, path: Path) -> ModuleType | None:
    """The cache entry, imported; None when there is none or it is damaged (then deleted)."""
    if not path.exists():
        return None
    try:
        if _is_whole_elf(path):
            return _import(module_name, path)
    except (ImportError, OSError):
        pass
    path.unlink(missing_ok=True)
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


def _compile(source: str, module_name: str, compiler: Sequence[str], path: Path) -> None:
    import subprocess  # only on a cache miss: start-up time matters on a hit
    import tempfile

    includes = [f"-I{find_cuda_include()}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(fd)
    command = [*compiler, *CFLAGS, *includes, "-x", "c", "-", "-o", partial, *LIBS]
    try:
        try:
            done = subprocess.run(command, input=source, capture_output=True, text=True)
        except OSError as e:
            raise BuildError(f"cannot run the C compiler {compiler[0]}: {e.strerror}") from None
        if done.returncode != 0:
            raise BuildError(f"compiling launcher {module_name} failed: {Path(compiler[0]).name} "
                             f"exited with {done.returncode}", log=done.stderr)
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
