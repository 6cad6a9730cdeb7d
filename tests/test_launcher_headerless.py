"""The launcher needs no Python headers and uses only CPython's stable ABI.

STABLE_ABI is the part of CPython's Misc/stable_abi.toml that a launcher may
use, with the version each entry was added in (3.10 is the level the template
targets; the two buffer functions are 3.11 and are exported by 3.10 too).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from cubinrun.launcher import build_launcher, generate_source, module_name_for

STABLE_ABI = {
    # functions
    "PyArg_ParseTupleAndKeywords": "3.2", "PyBool_FromLong": "3.2", "PyBuffer_Release": "3.11",
    "PyErr_Clear": "3.2", "PyErr_ExceptionMatches": "3.2", "PyErr_Format": "3.2",
    "PyErr_NewExceptionWithDoc": "3.2", "PyErr_Occurred": "3.2", "PyErr_SetObject": "3.2",
    "PyErr_SetString": "3.2", "PyEval_RestoreThread": "3.2", "PyEval_SaveThread": "3.2",
    "PyFloat_AsDouble": "3.2", "PyIndex_Check": "3.8", "PyList_GetItem": "3.2",
    "PyList_Size": "3.2", "PyLong_AsLongLongAndOverflow": "3.2",
    "PyLong_AsUnsignedLongLong": "3.2", "PyLong_FromUnsignedLong": "3.2",
    "PyLong_FromUnsignedLongLong": "3.2", "PyModule_AddIntConstant": "3.2",
    "PyModule_AddObjectRef": "3.10", "PyModule_Create2": "3.2", "PyNumber_Index": "3.2",
    "PyObject_CallMethodObjArgs": "3.2", "PyObject_GetAttrString": "3.2",
    "PyObject_GetBuffer": "3.11", "PyTuple_GetItem": "3.2", "PyTuple_New": "3.2",
    "PyTuple_SetItem": "3.2", "PyTuple_Size": "3.2", "PyType_FromSpec": "3.2",
    "PyType_GenericAlloc": "3.2", "PyType_GetFlags": "3.2",
    "PyUnicode_CompareWithASCIIString": "3.2", "PyUnicode_FromFormat": "3.2",
    "PyUnicode_FromString": "3.2", "PyUnicode_FromWideChar": "3.2",
    "PyUnicode_InternFromString": "3.2", "Py_BuildValue": "3.2", "Py_DecRef": "3.2",
    # data
    "_Py_NoneStruct": "3.2", "PyBool_Type": "3.2", "PyFloat_Type": "3.2", "PyLong_Type": "3.2",
    "PyExc_AttributeError": "3.2", "PyExc_OverflowError": "3.2", "PyExc_RuntimeError": "3.2",
    "PyExc_TypeError": "3.2", "PyExc_ValueError": "3.2",
}
ABOVE_3_10 = {"PyObject_GetBuffer", "PyBuffer_Release"}

# Every kind of parameter, so every converter is in the source.
LEAF_TYPES = ["i1", "u64", "fp16", "bf16", "fp32", "fp64", "*kbf16", "nvTmaDesc",
              "struct[i8,fp64]", "i32"]


def declared_api(source: str) -> dict[str, str]:
    """{name: 'func' | 'data'} of what the source declares with API_FUNC / API_DATA."""
    found = {}
    for kind, name in re.findall(r"^API_(FUNC|DATA)\([^)]*\)\s*(\w+)", source, re.M):
        found[name] = kind.lower()
    return found


def test_the_source_includes_no_python_header_and_declares_only_stable_abi_symbols():
    source = generate_source(LEAF_TYPES, 2)
    assert not re.search(r"#\s*include\s*[<\"]Python\.h[>\"]", source)
    assert "Python.h" not in re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    declared = declared_api(source)
    assert len(declared) >= 40
    assert set(declared) <= set(STABLE_ABI), set(declared) - set(STABLE_ABI)
    for name in declared:
        version = tuple(int(p) for p in STABLE_ABI[name].split("."))
        assert version <= (3, 10) or name in ABOVE_3_10, name


def test_every_python_name_used_is_declared_or_defined_in_the_source():
    source = generate_source(LEAF_TYPES, 2)
    code = re.sub(r"/\*.*?\*/|\"(?:\\.|[^\"\\])*\"", "", source, flags=re.S)  # no comments, strings
    used = set(re.findall(r"\b(_?Py[A-Za-z0-9_]*|METH_\w+)\b", code))
    defined = set(declared_api(source))
    defined |= set(re.findall(r"^#define (\w+)", source, re.M))
    defined |= set(re.findall(r"\btypedef struct (\w+)", source))
    defined |= set(re.findall(r"\}\s*(\w+);", source))                        # typedef'd names
    defined |= set(re.findall(r"typedef [^;(]*\(\*(\w+)\)", source))         # function types
    defined |= set(re.findall(r"^typedef \w+ (\w+);", source, re.M))
    defined |= set(re.findall(r"^static inline \w+ \*?(\w+)\(", source, re.M))
    defined.add("PyInit_" + module_name_for(LEAF_TYPES, 2))
    assert used <= defined, sorted(used - defined)


@pytest.fixture
def poisoned_cc(tmp_path, monkeypatch):
    """$CC that puts a folder whose Python.h is an #error first on the include path,
    and records each command line."""
    real = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    poison = tmp_path / "poison"
    poison.mkdir()
    (poison / "Python.h").write_text('#error "the launcher must not include Python.h"\n')
    log = tmp_path / "commands"
    wrapper = tmp_path / "recording-cc"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real}" -I"{poison}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CPATH", raising=False)
    monkeypatch.delenv("C_INCLUDE_PATH", raising=False)
    return log


def test_a_launcher_builds_without_python_headers(poisoned_cc, tmp_path):
    name = "cubinrun_launcher_headerless_test"
    module = build_launcher(generate_source(LEAF_TYPES, 2, module_name=name), name)
    assert module.SIGNATURE == tuple(LEAF_TYPES)
    assert module.Config(1, (64,)).block == (64, 1, 1)
    [command] = poisoned_cc.read_text().splitlines()
    include = sysconfig.get_paths()["include"]
    assert include not in command
    [folder] = re.findall(r"-I(\S+)", command)                  # cuda.h's, nothing of Python's
    assert (Path(folder) / "cuda.h").is_file() and not (Path(folder) / "Python.h").exists()
    assert Path(module.__file__).name.endswith(".abi3.so")


def test_the_built_module_imports_only_stable_abi_symbols_and_exports_only_its_init(
        poisoned_cc):
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) not installed")
    name = "cubinrun_launcher_headerless_symbols"
    module = build_launcher(generate_source(LEAF_TYPES, 2, module_name=name), name)
    undefined = subprocess.run(["nm", "-D", "--undefined-only", module.__file__],
                               capture_output=True, text=True, check=True).stdout
    python_symbols = {line.split()[-1] for line in undefined.splitlines()
                      if re.search(r"\b_?Py", line)}
    assert python_symbols and python_symbols <= set(STABLE_ABI), python_symbols - set(STABLE_ABI)
    defined = subprocess.run(["nm", "-D", "--defined-only", module.__file__],
                             capture_output=True, text=True, check=True).stdout
    assert [line.split()[-1] for line in defined.splitlines()] == [f"PyInit_{name}"]


@pytest.mark.skipif(not shutil.which("x86_64-w64-mingw32-gcc"), reason="no mingw-w64 gcc")
def test_the_windows_branch_compiles_with_mingw(tmp_path):
    """The _WIN32 parts (LoadLibrary, dllimport/dllexport) at least compile;
    linking and running them is the Wine stage's job."""
    from cubinrun.launcher.build import find_cuda_include
    source = tmp_path / "launcher.c"
    source.write_text(generate_source(LEAF_TYPES, 2))
    done = subprocess.run(["x86_64-w64-mingw32-gcc", "-fsyntax-only", "-Wall", "-Werror",
                           "-Wno-unused-function", f"-I{find_cuda_include()}", str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
