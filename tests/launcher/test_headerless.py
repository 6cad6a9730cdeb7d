"""The launcher needs no Python headers and uses only CPython's stable ABI.

STABLE_ABI is the part of CPython's Misc/stable_abi.toml that a launcher may
use, with the version each entry was added in (3.10 is the level the template
targets; the two buffer functions are 3.11 and are exported by 3.10 too).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest

from cubinrun.launcher import build_launcher, generate_source, module_name_for
from support.platforms import skip_on_windows

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
    skip_on_windows("the recording compiler is a shell script; .ci/wine builds every launcher with no Python headers anyway")
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


# --- one abi3 binary, every interpreter -------------------------------------------

def other_pythons() -> list[str]:
    """CPython 3.10+ interpreters other than this one that run: those in
    $CUBINRUN_TEST_PYTHONS (os.pathsep-separated), python3.1x on PATH, pyenv's."""
    import glob
    import sys
    candidates = [p for p in os.environ.get("CUBINRUN_TEST_PYTHONS", "").split(os.pathsep) if p]
    candidates += [p for minor in range(10, 15) if (p := shutil.which(f"python3.{minor}"))]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0-9]*/bin/python3")))
    found: dict[str, str] = {}
    for python in candidates:
        try:
            done = subprocess.run([python, "-c", "import sys, sysconfig; print(sys.version_info[:2]"
                                   ", sysconfig.get_config_var('Py_GIL_DISABLED'))"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        version = done.stdout.strip()
        if done.returncode == 0 and version.endswith(("None", "0")) and \
                not version.startswith(str(sys.version_info[:2])):
            found.setdefault(version, python)
    return list(found.values())

# Loads the launcher file given (built by this interpreter), launches it against
# the fake driver and checks what the limited API must get right: refcounts of
# mortal and immortal (3.12+) objects, the heap type, messages, buffers.
CROSS_CHECK = textwrap.dedent("""
    import gc, importlib.machinery, importlib.util, json, sys
    path, name = sys.argv[1:3]
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    module = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location(name, path, loader=loader))
    loader.exec_module(module)
    config = module.Config(0xF00D, (32,))
    kept = 10 ** 12 + int(sys.argv[3])                 # a mortal int, not cached by CPython
    before = sys.getrefcount(kept)
    module.launch(config, 1, 1, 1, 0, kept, 0.5, None, bytes(16))
    held = sys.getrefcount(kept) - before              # the slot keeps a reference
    module.launch_n(3, config, 1, 1, 1, 0, 7, 1.5, None, bytearray(16))
    released = sys.getrefcount(kept) - before
    none_before = sys.getrefcount(None)
    for i in range(20000):                              # None and small ints: immortal on 3.12+
        module.launch(config, 1, 1, 1, 0, i % 200, float(i), None, bytes(16))
    config_type = type(config)
    type_refs = sys.getrefcount(config_type)
    for i in range(1000):
        module.Config(i, (32, 2))
    gc.collect()
    try:
        module.launch(config, 1, 1, 1, 0, "x", 0.5, None, bytes(16))
    except TypeError as e:
        message = str(e)
    print(json.dumps({"held": held, "released": released, "type_refs_after":
                      sys.getrefcount(config_type) - type_refs, "message": message,
                      "none_ok": sys.getrefcount(None) > 0 and none_before > 0,
                      "type": f"{config_type.__module__}.{config_type.__qualname__}",
                      "repr": repr(module.Config(1, (2,))).split(", ", 1)[1]}))
""")


def test_one_abi3_launcher_runs_on_every_python_from_3_10(poisoned_cc, tmp_path):
    """Skipped where no other CPython runs; on the CPU machine pyenv has 3.10,
    3.12 and 3.13 (3.12 and 3.13 make None and small ints immortal)."""
    import json
    import sys

    from fakecuda import recorded_launches, shared_fake_driver
    others = other_pythons()
    if not others:
        pytest.skip("no other CPython 3.10+ found (set CUBINRUN_TEST_PYTHONS)")
    leaf_types = ["u64", "fp32", "*fp32", "struct[i8,fp64]"]
    name = "cubinrun_launcher_every_python"
    module = build_launcher(generate_source(leaf_types, module_name=name), name)
    fake = shared_fake_driver(tmp_path)
    for python in [sys.executable, *others]:
        record = tmp_path / f"launches-{Path(python).name}"
        env = {"CUBINRUN_LIBCUDA": str(fake.path), "FAKECUDA_RECORD": str(record),
               "FAKECUDA_PARAM_SIZES": "8,4,8,16", "PATH": os.environ.get("PATH", "")}
        done = subprocess.run([python, "-c", CROSS_CHECK, module.__file__, name, "5"],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (python, done.returncode, done.stderr)
        result = json.loads(done.stdout)
        assert result == {
            "held": 1, "released": 0, "type_refs_after": 0, "none_ok": True,
            "message": "argument 0 (u64): expected an int, got str",
            "type": f"{name}.Config",
            "repr": "block=(2, 1, 1), shared=0, num_ctas=1, cluster=None, cooperative=False, "
                    "pdl=False)"}, python       # function=%p is written as the platform writes it
        launches = recorded_launches(record, [8, 4, 8, 16])    # the fake keeps the first 64
        assert [launch.params[0] for launch in launches[:6]] == [
            (v).to_bytes(8, "little") for v in (10 ** 12 + 5, 7, 7, 7, 0, 1)], python
        assert launches[5].params[1:3] == [(0x3F800000).to_bytes(4, "little"), bytes(8)]
