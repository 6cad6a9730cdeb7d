"""Compiling and caching launchers with the real C compiler (no GPU needed)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
from fakecuda import recorded_launches, shared_fake_driver

from cubinrun.errors import BuildError, UsageError
from cubinrun.launcher import build, build_launcher, generate_source, load_launcher
from cubinrun.cache import launcher_entry as cache_entry
from cubinrun.launcher import module_name_for, tool_runs
from cubinrun.launcher.build import cache_key, find_compiler, find_cuda_include
from support.platforms import skip_on_windows
from support.repo import REPO

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
    if sys.platform == "win32":         # no shell scripts: the wrapper is Python
        wrapper = tmp_path / "counting_cc.py"
        wrapper.write_text(f"import subprocess, sys\nopen({str(calls)!r}, 'a').write('run\\n')\n"
                           f"sys.exit(subprocess.run([{real!r}, *sys.argv[1:]]).returncode)\n")
        monkeypatch.setenv("CC", f'"{sys.executable}" "{wrapper}"')
    else:
        wrapper = tmp_path / "counting-cc"
        wrapper.write_text(f'#!/bin/sh\necho run >> "{calls}"\nexec "{real}" "$@"\n')
        wrapper.chmod(0o755)
        monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))

    def count() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    count.wrapper = wrapper
    return count


# Builds (or reuses) the launcher of `built` and launches it once against the
# fake driver, which appends the launch to $FAKECUDA_RECORD.
LAUNCH_IN_SUBPROCESS = textwrap.dedent("""
    import sys
    from cubinrun.launcher import build_launcher
    module = build_launcher(open(sys.argv[1]).read(), sys.argv[2])
    module.launch(module.Config(0xF00D, (32,)), 1, 1, 1, 0, -5, 0x7F0000000000, 7)
    print("launched", module.__file__)
""")


def launcher_files(cache: Path) -> list[Path]:
    return sorted((cache / "launchers").iterdir())


def module_files(cache: Path) -> list[Path]:
    """The built modules in the cache, without the refs that name them."""
    return [f for f in launcher_files(cache) if not f.name.endswith(".ref")]


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
    [so_file] = module_files(tmp_path / "cache")
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
    if sys.platform != "win32":         # there $CC is python.exe running the wrapper
        os.utime(counting_cc.wrapper, ns=(0, 12345))    # an upgraded compiler
        assert cache_key("int x;", compiler) != key


def test_a_damaged_cache_entry_is_rebuilt(counting_cc, built):
    skip_on_windows("it replaces a launcher this process has loaded, which Windows refuses; test_windows.py damages one that is not loaded")
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
    files = launcher_files(tmp_path / "cache")              # and no partial file left behind
    assert all(f.name.startswith(name + ".") for f in files)
    if sys.platform == "win32":
        # A PE file carries its link time: builds racing each other differ in bytes,
        # and one that another process has loaded stays beside the one the ref names.
        assert [f.suffix for f in files].count(".ref") == 1
        assert all(f.suffix == ".pyd" for f in module_files(tmp_path / "cache"))
        return
    [module] = module_files(tmp_path / "cache")
    assert sorted(f.suffix for f in files) == [".ref", ".so"] and module.name.endswith(".abi3.so")


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
    skip_on_windows("libc.so.6 stands in for a library that is no driver")
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


def flip_middle_bytes(path: Path) -> bytes:
    """The library with the bytes of its code (.text, in the middle of the file)
    inverted: same size, headers and section table intact. Written as a new file
    over it (this process may have the old one mapped)."""
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        text = ELFFile(f).get_section_by_name(".text")
        start, end = text["sh_offset"], text["sh_offset"] + text["sh_size"]
    data = bytearray(path.read_bytes())
    data[start:end] = bytes(b ^ 0xFF for b in data[start:end])
    damaged = path.with_name("damaged")
    damaged.write_bytes(data)
    os.replace(damaged, path)
    return bytes(data)


def test_a_launcher_with_flipped_bytes_is_rebuilt_and_never_loaded(counting_cc, built, tmp_path):
    skip_on_windows("it flips the .text section of an ELF file; test_windows.py damages a .pyd")
    source_file, name, so_file = built
    fake = shared_fake_driver(tmp_path)                  # built with $CC too, maybe
    builds = counting_cc()
    record = tmp_path / "launches"
    env = {**os.environ, "CUBINRUN_LIBCUDA": str(fake.path), "FAKECUDA_RECORD": str(record),
           "FAKECUDA_PARAM_SIZES": "1,8,4"}
    damaged = flip_middle_bytes(so_file)
    for run in range(2):                 # the rebuilt entry is a plain hit the second time
        done = subprocess.run([sys.executable, "-c", LAUNCH_IN_SUBPROCESS, str(source_file),
                               name], cwd=REPO, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (done.returncode, done.stderr)   # loaded, it dies (SIGILL)
        assert done.stdout.startswith("launched")
    assert counting_cc() == builds + 1
    [launch, again] = recorded_launches(record, [1, 8, 4])
    assert launch.params == [b"\xfb", (0x7F0000000000).to_bytes(8, "little"), b"\x07\0\0\0"]
    [module] = module_files(tmp_path / "cache")
    data = module.read_bytes()
    assert data != damaged and len(data) == len(damaged)
    digest, size, file_name = cache_entry.ref_path(
        module.with_name(module.name.split(".abi3")[0].rsplit(".", 1)[0])).read_text().split()
    assert (digest, int(size), file_name) == (hashlib.sha256(data).hexdigest(), len(data),
                                              module.name)


def test_a_damaged_launcher_that_cannot_be_removed_is_rebuilt_under_another_name(
        counting_cc, built, monkeypatch):
    """As on Windows, where a loaded .pyd can be neither deleted nor replaced."""
    skip_on_windows("it damages an ELF file; test_windows.py covers a locked .pyd for real")
    source_file, name, so_file = built
    flip_middle_bytes(so_file)
    locked = {so_file}
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst) in locked:
            raise PermissionError(13, "locked", str(dst))
        real_replace(src, dst)
    monkeypatch.setattr(cache_entry.os, "replace", replace)
    monkeypatch.setattr(cache_entry, "_remove", lambda path: None)
    monkeypatch.setattr(build, "_loaded", {})
    module = build_launcher(source_file.read_text(), name)
    assert counting_cc() == 2
    assert Path(module.__file__).name == so_file.name.replace(".abi3.so", "-1.abi3.so")
    assert module.SIGNATURE == ("i8", "*fp32", "u32") and so_file.exists()
    monkeypatch.setattr(build, "_loaded", {})
    assert build_launcher(source_file.read_text(), name).__file__ == module.__file__
    assert counting_cc() == 2                            # the new name is what the ref names


def test_a_module_and_its_ref_are_one_cache_entry(counting_cc, built, tmp_path):
    skip_on_windows("this process has the launcher loaded, so Windows keeps the file")
    from cubinrun.cache.entries import clear, summarize
    [launchers] = [kind for kind in summarize(tmp_path / "cache") if kind.kind.name == "launchers"]
    assert (launchers.entries, launchers.temporary_files) == (1, 0)
    assert clear(tmp_path / "cache", ("launchers",)).removed == {"launchers": 1}
    assert launcher_files(tmp_path / "cache") == []


@pytest.mark.parametrize("ref_text", ["", "garbage", "0 12 ../../etc/passwd", "0 12 other.so",
                                      "0 12 cubinrun_launcher_x.0123.so" + " " * 10 ** 6 + "x",
                                      "\xff\xfe 1 2"])
def test_a_damaged_or_foreign_ref_is_a_miss(tmp_path, ref_text):
    prefix = tmp_path / "cubinrun_launcher_x.0123"
    cache_entry.ref_path(prefix).write_text(ref_text)
    assert cache_entry.verified_module(prefix) is None


def test_a_compiler_that_hangs_is_killed_after_the_timeout(tmp_path, monkeypatch):
    skip_on_windows("the hanging compiler is a shell script")
    started = tmp_path / "started-pid"
    hanging = tmp_path / "hanging-cc"
    hanging.write_text(f'#!/bin/sh\nsleep 60 &\necho $! > "{started}"\nwait\n')
    hanging.chmod(0o755)
    monkeypatch.setenv("CC", str(hanging))
    monkeypatch.setenv("CUBINRUN_CC_TIMEOUT", "0.5")
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    start = time.monotonic()
    with pytest.raises(BuildError) as caught:
        build_launcher("int x;", "cubinrun_launcher_hangs")
    assert time.monotonic() - start < 10
    assert caught.value.exit_code == 3
    assert str(caught.value) == ("the C compiler hanging-cc did not finish compiling launcher "
                                 "cubinrun_launcher_hangs within 0.5 s (CUBINRUN_CC_TIMEOUT "
                                 "sets the limit)")
    assert launcher_files(tmp_path / "cache") == []      # no partial file left
    sleeper = Path(f"/proc/{started.read_text().strip()}/stat")
    for _ in range(100):                                  # what the compiler started dies too
        if not sleeper.exists() or sleeper.read_text().split(") ")[1].startswith("Z"):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the compiler's child is still running")


def test_a_hanging_compiler_ends_a_dry_run_with_exit_3_and_one_line(tmp_path):
    skip_on_windows("the hanging compiler is a shell script")
    hanging = tmp_path / "hanging-cc"
    hanging.write_text("#!/bin/sh\nexec sleep 60\n")
    hanging.chmod(0o755)
    env = {**os.environ, "CC": str(hanging), "CUBINRUN_CC_TIMEOUT": "0.3",
           "CUBINRUN_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "cubinrun", "launch",
                           str(REPO / "configs" / "vector_add.yaml"), "--dry-run"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    [line] = done.stderr.strip().splitlines()
    assert "hanging-cc did not finish" in line and "0.3 s" in line


@pytest.mark.parametrize("value", ["abc", "0", "-1", "inf", "nan"])
def test_a_bad_compiler_timeout_is_a_usage_error(monkeypatch, value):
    monkeypatch.setenv("CUBINRUN_CC_TIMEOUT", value)
    with pytest.raises(UsageError, match="CUBINRUN_CC_TIMEOUT must be a number of seconds > 0"):
        tool_runs.compile_timeout()
    monkeypatch.setenv("CUBINRUN_CC_TIMEOUT", " 2.5 ")
    assert tool_runs.compile_timeout() == 2.5
