"""Which C compiler builds launchers, and its command line for a shared library.

Discovery order (README "C compiler"), the first found wins:

  Linux and macOS: $CC; cc, gcc, clang on PATH; `zig cc` from the ziglang
  package when it is installed.
  Windows: $CC; MSVC cl.exe when the Visual Studio environment is set
  (VCINSTALLDIR, INCLUDE and LIB, and cl on PATH); clang, gcc on PATH;
  `zig cc` from the ziglang package; the TinyCC inside triton-windows.

Each family knows how it makes a shared library: gcc-like (gcc, clang, cc, zig
cc: -shared, -fPIC on Linux), msvc (cl /LD, clang-cl) and tcc (-shared). On
Windows a launcher links the interpreter's versioned DLL (python3XY.dll: the
embeddable Python has no libs/ folder): gcc-like compilers link the DLL
itself, TinyCC a .def made by `tcc -impdef`, MSVC an import library made with
lib.exe from the DLL's export table.
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import BuildError
from ..platform import WINDOWS
from .tool_runs import run_tool

GCC, MSVC, TCC = "gcc", "msvc", "tcc"
INSTALL_HINT = "pip install ziglang"


@dataclass(frozen=True)
class Compiler:
    family: str                 # GCC, MSVC or TCC: how its command line is written
    command: tuple[str, ...]    # the program (a resolved path) and the words $CC gave
    origin: str                 # where it was found, for messages: "$CC", "PATH", "ziglang", ...
    windows: bool               # builds a Windows DLL (.pyd) linked to python3XY.dll

    @property
    def target(self) -> str:
        return "win_amd64" if self.windows else sysconfig.get_platform()

    def identity(self) -> list[str]:
        """What names this compiler in a cache key: family, target, the program's
        stat (it stands in for a version: running it would cost start-up time)
        and the words after it. ziglang is a Python package: its version counts."""
        real = os.path.realpath(self.command[0])
        stat = os.stat(real)
        words = [self.family, self.target, real, str(stat.st_size), str(stat.st_mtime_ns),
                 *self.command[1:]]
        if self.origin == "ziglang":
            words.append(_package_version("ziglang"))
        return words

    def flags(self, optimize: str = "-O2", extension: bool = True) -> list[str]:
        """The options of a shared-library build (a cache key includes them)."""
        if self.family == MSVC:
            return ["/nologo", "/O2", "/LD"]
        flags = [optimize, "-shared"] + ([] if self.windows else ["-fPIC"])
        # An extension exports PyInit_* only (template.c marks it); tcc has no -fvisibility.
        if extension:
            return flags + (["-fvisibility=hidden"] if self.family == GCC else [])
        # Any other library exports all its functions: a TinyCC DLL only with -rdynamic.
        return flags + (["-rdynamic"] if self.family == TCC and self.windows else [])

    def shared_library(self, source: str, output: str, includes: Sequence[str],
                       workdir: str, optimize: str = "-O2", link_python: bool = True) -> list[str]:
        """The command that compiles C file `source` into the shared library `output`.
        `workdir` is a scratch folder for what the toolchain writes besides it;
        a library that is no Python extension (`link_python` false, the fake
        driver) exports all its functions and, on Windows, links no python3XY.dll."""
        if self.family == MSVC:
            return [*self.command, *self.flags(), *(f"/I{d}" for d in includes),
                    source, f"/Fe{output}", f"/Fo{os.path.join(workdir, 'launcher.obj')}",
                    "/link", f"/IMPLIB:{os.path.join(workdir, 'launcher.lib')}",
                    *([python_import_library(self, workdir)]
                      if self.windows and link_python else [])]
        command = [*self.command, *self.flags(optimize, link_python),
                   *(f"-I{d}" for d in includes),
                   source, "-o", output]
        if not self.windows:
            return command + ["-ldl"]   # the driver is opened with dlopen: no -lcuda
        if not link_python:
            return command
        if self.family == TCC:
            return command + [tcc_definitions(self, workdir)]
        return command + [str(python_dll())]

    def executable(self, sources: Sequence[str], output: str,
                   flags: Sequence[str] = ()) -> list[str]:
        """A command that builds a program (the tests build their C checks with it)."""
        if self.family == MSVC:
            return [*self.command, "/nologo", *flags, *sources, f"/Fe{output}"]
        return [*self.command, *flags, *sources, "-o", output]


def find_compiler(platform: str | None = None) -> Compiler:
    """The compiler launchers are built with (order in the module docstring);
    `platform` stands in for sys.platform in tests."""
    windows = WINDOWS if platform is None else platform == "win32"
    if env := os.environ.get("CC", "").strip():
        return _from_cc(env, windows)
    for found in (_windows_candidates() if windows else _posix_candidates()):
        if found is not None:
            return found
    tried = ("cl.exe with the Visual Studio environment, clang, gcc, zig, triton-windows' TinyCC"
             if windows else "cc, gcc, clang, zig")
    raise BuildError(f"no C compiler found ({tried}): {INSTALL_HINT}, or set $CC")


def _from_cc(env: str, windows: bool) -> Compiler:
    # Windows paths keep their backslashes; quotes around a word still group it.
    try:
        split = shlex.split(env, posix=not windows)
    except ValueError as exc:                   # an unbalanced quote
        raise BuildError(f"$CC {env!r} cannot be split into words ({exc}): "
                         "balance its quotes") from None
    words = [w[1:-1] if len(w) > 1 and w[0] == w[-1] == '"' else w for w in split]
    path = shutil.which(words[0])
    if path is None:
        raise BuildError(f"C compiler {words[0]!r} from $CC not found")
    program = [w for w in words if not os.path.basename(w).startswith(("ccache", "sccache"))]
    return Compiler(family_of(program[0] if program else words[0]), (path, *words[1:]),
                    "$CC", windows)


def family_of(program: str) -> str:
    """The family a compiler's name says: cl and clang-cl take MSVC options."""
    name = program.replace("\\", "/").rsplit("/", 1)[-1].lower()   # either separator
    for suffix in (".exe", ".bat", ".cmd"):
        name = name.removesuffix(suffix)
    if name in ("cl", "clang-cl") or name.endswith("-cl"):
        return MSVC
    if name == "tcc" or name.endswith("-tcc"):
        return TCC
    return GCC


def _posix_candidates():
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        yield path and Compiler(GCC, (path,), "PATH", False)
    yield _zig(False)


def _windows_candidates():
    yield _msvc()
    for name in ("clang", "gcc"):
        path = shutil.which(name)
        yield path and Compiler(GCC, (path,), "PATH", True)
    yield _zig(True)
    yield _triton_tcc()


def _msvc() -> Compiler | None:
    """cl.exe, only inside a Visual Studio environment (vcvars64.bat or a
    Developer prompt): outside it cl finds neither headers nor libraries."""
    if not all(os.environ.get(v) for v in ("VCINSTALLDIR", "INCLUDE", "LIB")):
        return None
    path = shutil.which("cl")
    return path and Compiler(MSVC, (path,), "the Visual Studio environment", True)


def _zig(windows: bool) -> Compiler | None:
    """`python -m ziglang cc`: a whole clang toolchain from one pip install."""
    if importlib.util.find_spec("ziglang") is None:
        return None
    return Compiler(GCC, (sys.executable, "-m", "ziglang", "cc"), "ziglang", windows)


def _triton_tcc() -> Compiler | None:
    """The TinyCC that the triton-windows wheel bundles (triton/runtime/tcc)."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    for folder in (spec and spec.submodule_search_locations) or ():
        tcc = Path(folder) / "runtime" / "tcc" / "tcc.exe"
        if tcc.is_file():
            return Compiler(TCC, (str(tcc),), "triton-windows", True)
    return None


def _package_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return ""


# --- linking python3XY.dll without an import library ------------------------

def python_dll() -> Path:
    """The interpreter's versioned DLL (python313.dll): the module file of
    sys.dllhandle, else the one beside the interpreter."""
    name = f"python{sys.version_info.major}{sys.version_info.minor}.dll"
    handle = getattr(sys, "dllhandle", None)
    if handle:
        import _winapi
        return Path(_winapi.GetModuleFileName(handle))
    for folder in (sys.base_prefix, os.path.dirname(sys.executable)):
        if os.path.isfile(os.path.join(folder, name)):
            return Path(folder) / name
    raise BuildError(f"{name} not found beside {sys.executable}: launchers link against it")


def tcc_definitions(compiler: Compiler, workdir: str) -> str:
    """A .def of the DLL's exports, made by `tcc -impdef` (TinyCC links through it)."""
    dll = python_dll()
    out = os.path.join(workdir, dll.stem + ".def")
    _run([*compiler.command, "-impdef", str(dll), "-o", out], "tcc -impdef",
         f"listing the exports of {dll.name}")
    return out


def python_import_library(compiler: Compiler, workdir: str) -> str:
    """An import library for python3XY.dll: a .def from its export table, then
    lib.exe (beside cl.exe) or llvm-lib (beside clang-cl)."""
    from .pe_exports import exported_names
    dll = python_dll()
    definitions = os.path.join(workdir, dll.stem + ".def")
    with open(definitions, "w") as f:
        f.write(f"LIBRARY {dll.name}\nEXPORTS\n")
        f.writelines(f"    {name}\n" for name in exported_names(dll))
    folder = os.path.dirname(compiler.command[0])
    librarian = next((p for p in (os.path.join(folder, "lib.exe"),
                                  os.path.join(folder, "llvm-lib.exe"),
                                  shutil.which("lib"), shutil.which("llvm-lib"))
                      if p and os.path.isfile(p)), None)
    if librarian is None:
        raise BuildError(f"no lib.exe beside {compiler.command[0]}: it makes the import "
                         f"library for {dll.name}")
    library = os.path.join(workdir, dll.stem + ".lib")
    _run([librarian, "/nologo", f"/def:{definitions}", f"/out:{library}", "/machine:x64"],
         "lib.exe", f"making the import library for {dll.name}")
    return library


def _run(command: list[str], what: str, doing: str) -> None:
    returncode, log = run_tool(command, what, doing)
    if returncode != 0:
        raise BuildError(f"{what} exited with {returncode}", log=log)
