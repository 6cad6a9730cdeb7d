"""Compiling and caching launchers with the real C compiler (no GPU needed)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from cubinrun.errors import BuildError
from cubinrun.launcher import build_launcher, generate_source, load_launcher, module_name_for
from cubinrun.launcher.build import cache_key, find_compiler, find_cuda_include

REPO = Path(__file__).resolve().parent.parent
POINTEES = "i1 i8 i16 i32 i64 u1 u8 u16 u32 u64 fp16 bf16 fp32 fp64 fp8e4nv fp8e5 fp8e4b15".split()

# Imports the launcher in a fresh process: in this one, a module once loaded
# from a path stays loaded, whatever happens to the file afterwards.
BUILD_IN_SUBPROCESS = textwrap.dedent("""
    import sys
    from cubinrun.launcher import build_launcher
    module = build_launcher(open(sys.argv[1]).read(), sys.argv[2])
    print(module.SIGNATURE)
""")


@pytest.fixture
def counting_cc(tmp_path, monkeypatch):
    """$CC as a wrapper around the real compiler that counts its runs, and a private cache."""
    real = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    calls = tmp_path / "cc-calls"
    wrapper = tmp_path / "counting-cc"
    wrapper.write_text(f'#!/bin/sh\necho run >> "{calls}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))

    def count() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    count.wrapper = wrapper
    return count


def launcher_files(cache: Path) -> list[Path]:
    return sorted((cache / "launchers").iterdir())


def build_in_subprocess(source_file: Path, module_name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BUILD_IN_SUBPROCESS, str(source_file),
                           module_name], cwd=REPO, capture_output=True, text=True)


@pytest.mark.parametrize("leaf_types, num_scratch", [
    ([], 0),
    (["*" + t for t in POINTEES] + ["*k" + t for t in POINTEES], 2),
    (["i32", "fp16", "nvTmaDesc"] * 20 + ["u64"], 1),
])
def test_signatures_compile_and_import(counting_cc, leaf_types, num_scratch):
    name = module_name_for(leaf_types, num_scratch)
    module = build_launcher(generate_source(leaf_types, num_scratch), name)
    assert module.__name__ == name
    assert (module.SIGNATURE, module.NUM_SCRATCH) == (tuple(leaf_types), num_scratch)
    assert module.Config(1, (32,)).block == (32, 1, 1)
    assert counting_cc() == 1


def test_load_launcher_reuses_the_module_in_process(counting_cc):
    first = load_launcher(["u16", "u16", "fp64"], 1)
    assert load_launcher(("u16", "u16", "fp64"), 1) is first
    assert first.__name__ == module_name_for(["u16", "u16", "fp64"], 1)


@pytest.fixture
def built(counting_cc, tmp_path):
    """A launcher built once, its source in a file for subprocesses."""
    leaf_types = ["i8", "*fp32", "u32"]
    name = module_name_for(leaf_types)
    source_file = tmp_path / "launcher.c"
    source_file.write_text(generate_source(leaf_types))
    build_launcher(source_file.read_text(), name)
    [so_file] = launcher_files(tmp_path / "cache")
    return source_file, name, so_file


def test_a_second_build_is_a_cache_hit(counting_cc, built):
    source_file, name, so_file = built
    assert counting_cc() == 1
    build_launcher(source_file.read_text(), name)
    done = build_in_subprocess(source_file, name)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "('i8', '*fp32', 'u32')"
    assert counting_cc() == 1


def test_the_cache_key_covers_the_compiler_flags_and_source(counting_cc):
    compiler = find_compiler()
    key = cache_key("int x;", compiler)
    assert cache_key("int x;", compiler) == key
    assert cache_key("int y;", compiler) != key
    assert cache_key("int x;", replace(compiler, command=(*compiler.command, "-g"))) != key
    assert cache_key("int x;", replace(compiler, family="tcc")) != key
    assert cache_key("int x;", replace(compiler, windows=not compiler.windows)) != key
    os.utime(counting_cc.wrapper, ns=(0, 12345))        # an upgraded compiler
    assert cache_key("int x;", compiler) != key


def test_a_damaged_cache_entry_is_rebuilt(counting_cc, built):
    source_file, name, so_file = built
    data = so_file.read_bytes()
    for builds, damaged_data in enumerate([data[:len(data) // 2], b"not a library"], start=2):
        # A new file over the entry: writing into it would also break the copy
        # this process has mapped (and kill it with SIGBUS).
        damaged = so_file.with_name("damaged")
        damaged.write_bytes(damaged_data)
        os.replace(damaged, so_file)
        done = build_in_subprocess(source_file, name)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "('i8', '*fp32', 'u32')"
        assert counting_cc() == builds and so_file.read_bytes() != damaged_data


def test_concurrent_builds_of_one_launcher_all_succeed(counting_cc, tmp_path):
    leaf_types = ["u8", "*kfp16", "bf16"]
    name = module_name_for(leaf_types, 2)
    source_file = tmp_path / "launcher.c"
    source_file.write_text(generate_source(leaf_types, 2))
    processes = [subprocess.Popen([sys.executable, "-c", BUILD_IN_SUBPROCESS, str(source_file),
                                   name], cwd=REPO, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert out.strip() == "('u8', '*kfp16', 'bf16')"
    [entry] = launcher_files(tmp_path / "cache")            # and no partial file left behind
    assert entry.name.startswith(name + ".")


def test_a_compiler_failure_is_a_build_error_with_the_compiler_log(counting_cc, tmp_path):
    with pytest.raises(BuildError) as caught:
        build_launcher("#error launcher template is broken\n", "cubinrun_launcher_broken")
    error = caught.value
    assert error.exit_code == 3
    assert "\n" not in str(error) and "cubinrun_launcher_broken" in str(error)
    assert "launcher template is broken" in error.log
    assert launcher_files(tmp_path / "cache") == []        # no partial file left


def test_missing_compiler_is_a_build_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(BuildError, match="no-such-cc"):
        build_launcher("int x;", "cubinrun_launcher_x")
    monkeypatch.delenv("CC")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match="no C compiler found"):
        build_launcher("int x;", "cubinrun_launcher_x")


def test_cuda_h_is_found_through_cuda_home_or_is_a_build_error(monkeypatch, tmp_path):
    monkeypatch.setattr("cuda.pathfinder.find_nvidia_header_directory", lambda name: None)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    with pytest.raises(BuildError, match="cuda.h not found"):
        find_cuda_include()
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "cuda.h").write_text("")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert find_cuda_include() == str(tmp_path / "include")


def test_without_a_driver_the_module_imports_and_a_launch_is_a_driver_load_error(
        counting_cc, monkeypatch, tmp_path):
    # A module of its own: a launcher keeps the driver it found at its first launch.
    name = "cubinrun_launcher_no_driver"
    module = build_launcher(generate_source(["*fp16", "u16"], module_name=name), name)
    config = module.Config(1, (32,))
    missing = tmp_path / "libcuda-missing.so"
    monkeypatch.setenv("CUBINRUN_LIBCUDA", str(missing))
    with pytest.raises(module.DriverLoadError, match="libcuda-missing.so"):
        module.launch(config, 1, 1, 1, 0, None, 3)
    with pytest.raises(module.DriverLoadError, match="libcuda-missing.so"):
        module.launch(config, 0, 1, 1, 0, 0x1000, 3)        # checking a pointer needs it too
    monkeypatch.setenv("CUBINRUN_LIBCUDA", "libc.so.6")     # loads, but is no driver
    with pytest.raises(module.DriverLoadError, match="cuLaunchKernelEx"):
        module.launch(config, 1, 1, 1, 0, None, 3)
    assert module.launch(config, 0, 1, 1, 0, None, 3) is None  # nothing to launch: no driver needed
