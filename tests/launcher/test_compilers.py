"""Which C compiler builds launchers (cubinrun/launcher/compilers.py): the
discovery order on Linux and Windows with fake compilers on PATH, a fake
Visual Studio environment, fake ziglang and triton-windows packages; and each
family's command line for a shared library."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cubinrun.errors import BuildError
from cubinrun.launcher import compilers
from cubinrun.launcher.compilers import GCC, MSVC, TCC, Compiler, family_of, find_compiler
from cubinrun.launcher.pe_exports import exported_names

VS_ENVIRONMENT = {"VCINSTALLDIR": r"C:\VS\VC", "INCLUDE": r"C:\VS\include", "LIB": r"C:\VS\lib"}


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """An empty PATH, no $CC, no Visual Studio environment, no ziglang or triton:
    `add` puts a fake program on PATH."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    for name in ("CC", *VS_ENVIRONMENT):
        monkeypatch.delenv(name, raising=False)
    real_find_spec = compilers.importlib.util.find_spec
    hidden = {"ziglang", "triton"}
    monkeypatch.setattr(compilers.importlib.util, "find_spec",
                        lambda name, *a: None if name in hidden else real_find_spec(name, *a))

    def add(name: str) -> str:
        program = folder / name
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)
        return str(program)

    add.folder = folder
    add.unhide = hidden.discard
    return add


posix_only = pytest.mark.skipif(sys.platform == "win32",
                                reason="fake compilers are shell scripts, which Windows cannot run")


@posix_only
def test_linux_order_is_cc_gcc_clang(bare):
    clang = bare("clang")
    assert find_compiler("linux") == Compiler(GCC, (clang,), "PATH", False)
    gcc = bare("gcc")
    assert find_compiler("linux").command == (gcc,)
    cc = bare("cc")
    assert find_compiler("linux").command == (cc,)


@posix_only
def test_windows_order_is_msvc_then_clang_then_gcc(bare, monkeypatch):
    gcc = bare("gcc")
    assert find_compiler("win32") == Compiler(GCC, (gcc,), "PATH", True)
    clang = bare("clang")
    assert find_compiler("win32").command == (clang,)
    cl = bare("cl")
    assert find_compiler("win32").family == GCC      # cl without its environment is skipped
    for name, value in VS_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    assert find_compiler("win32") == Compiler(MSVC, (cl,), "the Visual Studio environment", True)
    monkeypatch.delenv("LIB")                         # a half-set environment is no environment
    assert find_compiler("win32").command == (clang,)


@posix_only
def test_cc_wins_and_names_its_family(bare, monkeypatch):
    bare("gcc")
    for program, family in (("ccache", GCC), ("tcc", TCC), ("clang-cl", MSVC), ("cl", MSVC)):
        path = bare(program)
        monkeypatch.setenv("CC", f"{program} -O1" if program != "ccache" else "ccache gcc")
        found = find_compiler("win32")
        assert (found.family, found.command[0], found.origin) == (family, path, "$CC")
    monkeypatch.setenv("CC", "no-such-cc")
    with pytest.raises(BuildError, match="'no-such-cc' from \\$CC not found"):
        find_compiler("win32")


@pytest.mark.parametrize("platform", ["linux", "win32"])
def test_cc_with_an_unbalanced_quote_is_a_build_error(monkeypatch, platform):
    """A regression of the hardening issue: shlex's ValueError was a traceback (issue 24)."""
    monkeypatch.setenv("CC", "gcc '" if platform == "linux" else 'cl "')
    with pytest.raises(BuildError, match="cannot be split into words.*balance its quotes"):
        find_compiler(platform)


def test_family_of_names():
    assert family_of(r"C:\VS\bin\Hostx64\x64\CL.EXE") == MSVC
    assert family_of("/usr/bin/x86_64-w64-mingw32-gcc") == GCC
    assert family_of(r"C:\triton\runtime\tcc\tcc.exe") == TCC
    assert family_of("zig") == GCC


def test_ziglang_then_triton_tcc_then_the_one_line_fix(bare, tmp_path, monkeypatch):
    for platform in ("win32", "linux"):
        with pytest.raises(BuildError, match="pip install ziglang") as caught:
            find_compiler(platform)
        assert "\n" not in str(caught.value)
    # triton-windows, with its bundled TinyCC
    package = tmp_path / "site" / "triton"
    (package / "runtime" / "tcc").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "runtime" / "tcc" / "tcc.exe").write_bytes(b"MZ")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    bare.unhide("triton")
    tcc = find_compiler("win32")
    assert (tcc.family, tcc.command, tcc.origin) == (
        TCC, (str(package / "runtime" / "tcc" / "tcc.exe"),), "triton-windows")
    with pytest.raises(BuildError):
        find_compiler("linux")                        # TinyCC is a Windows fallback only
    # ziglang comes before it
    (tmp_path / "site" / "ziglang").mkdir()
    (tmp_path / "site" / "ziglang" / "__init__.py").write_text("")
    bare.unhide("ziglang")
    for platform, windows in (("win32", True), ("linux", False)):
        zig = find_compiler(platform)
        assert zig == Compiler(GCC, (sys.executable, "-m", "ziglang", "cc"), "ziglang", windows)


def test_command_lines_per_family(monkeypatch):
    dll = Path(r"C:\py\python313.dll")
    monkeypatch.setattr(compilers, "python_dll", lambda: dll)
    monkeypatch.setattr(compilers, "tcc_definitions", lambda c, w: os.path.join(w, "python313.def"))
    monkeypatch.setattr(compilers, "python_import_library",
                        lambda c, w: os.path.join(w, "python313.lib"))
    args = ("k.c", "out.pyd", ["inc"], "work")
    linux = Compiler(GCC, ("/usr/bin/gcc",), "PATH", False).shared_library(*args)
    assert linux == ["/usr/bin/gcc", "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-Iinc",
                     "k.c", "-o", "out.pyd", "-ldl"]
    mingw = Compiler(GCC, ("gcc",), "PATH", True).shared_library(*args)
    assert mingw == ["gcc", "-O2", "-shared", "-fvisibility=hidden", "-Iinc", "k.c", "-o",
                     "out.pyd", str(dll)]
    tcc = Compiler(TCC, ("tcc",), "triton-windows", True).shared_library(*args)
    assert tcc == ["tcc", "-O2", "-shared", "-Iinc", "k.c", "-o", "out.pyd",
                   os.path.join("work", "python313.def")]
    cl = Compiler(MSVC, ("cl",), "$CC", True).shared_library(*args)
    assert cl[:5] == ["cl", "/nologo", "/O2", "/LD", "/Iinc"] and "/Feout.pyd" in cl
    assert cl[cl.index("/link") + 2] == os.path.join("work", "python313.lib")
    # a library that needs no Python (the fake driver) links nothing more, and
    # exports all its functions (a TinyCC DLL only those marked, without -rdynamic)
    assert Compiler(GCC, ("gcc",), "PATH", True).shared_library(
        *args, link_python=False)[-1] == "out.pyd"
    assert Compiler(TCC, ("tcc",), "triton-windows", True).shared_library(
        *args, link_python=False) == ["tcc", "-O2", "-shared", "-rdynamic", "-Iinc", "k.c",
                                      "-o", "out.pyd"]


def test_msvc_import_library_is_made_from_the_dll_exports(tmp_path, monkeypatch):
    """The .def written for lib.exe lists the DLL's exports (a fake lib.exe records it)."""
    dll = _mingw_dll(tmp_path)
    monkeypatch.setattr(compilers, "python_dll", lambda: dll)
    seen = {}
    monkeypatch.setattr(compilers, "_run",
                        lambda command, what, doing: seen.setdefault("c", command))
    cl = tmp_path / "cl.exe"
    (tmp_path / "lib.exe").write_text("")
    library = compilers.python_import_library(Compiler(MSVC, (str(cl),), "$CC", True),
                                              str(tmp_path))
    assert seen["c"][0] == str(tmp_path / "lib.exe") and library.endswith(dll.stem + ".lib")
    definitions = (tmp_path / (dll.stem + ".def")).read_text().split()
    assert definitions[:4] == ["LIBRARY", dll.name, "EXPORTS", "PyFake_First"]
    assert "PyFake_Second" in definitions


def test_pe_exports_of_a_dll(tmp_path):
    assert exported_names(_mingw_dll(tmp_path)) == ["PyFake_First", "PyFake_Second"]
    (tmp_path / "not.dll").write_bytes(b"\x7fELF" + bytes(60))
    with pytest.raises(ValueError, match="not a PE file"):
        exported_names(tmp_path / "not.dll")


@pytest.mark.skipif(sys.platform != "win32", reason="the interpreter's own DLL is Windows only")
def test_the_interpreter_dll_is_found_and_exports_the_stable_abi():
    dll = compilers.python_dll()
    assert dll.name == f"python{sys.version_info.major}{sys.version_info.minor}.dll"
    assert {"PyModule_Create2", "PyType_FromSpec", "_Py_NoneStruct"} <= set(exported_names(dll))


def _mingw_dll(folder: Path) -> Path:
    """A DLL with two exports, made by mingw-w64 (on Windows, by the launchers' compiler)."""
    source = folder / "fake.c"
    source.write_text("__declspec(dllexport) int PyFake_Second(void) { return 2; }\n"
                      "__declspec(dllexport) int PyFake_First(void) { return 1; }\n")
    dll = folder / "python399.dll"
    if sys.platform == "win32":
        compiler = find_compiler()
        command = compiler.shared_library(str(source), str(dll), [], str(folder),
                                          link_python=False)
    else:
        mingw = shutil.which("x86_64-w64-mingw32-gcc")
        if mingw is None:
            pytest.skip("needs x86_64-w64-mingw32-gcc (Debian: gcc-mingw-w64-x86-64)")
        command = [mingw, "-shared", str(source), "-o", str(dll)]
    subprocess.run(command, check=True, capture_output=True, cwd=folder)
    return dll
