"""Windows only (CI runs them under Wine, .ci/wine): the launcher is a PE
.pyd built by the discovered compiler, linked to python3XY.dll, and drives the
fake driver DLL named by CUBINRUN_LIBCUDA; a loaded launcher is locked and the
cache never needs to replace or delete it; a damaged one is rebuilt.

.ci/wine fails unless every test here passed: a Wine run that quietly used no
Windows launcher cannot look green."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cubinrun.cache import folders as cache
from cubinrun.launcher import build_launcher, generate_source, load_launcher, module_name_for
from cubinrun.launcher.compilers import find_compiler, python_dll
from fakecuda import fake_driver_env, recorded_launches, shared_fake_driver
from support.repo import REPO

pytestmark = pytest.mark.skipif(sys.platform != "win32", reason="Windows only (CI: .ci/wine)")

LAUNCH = textwrap.dedent("""
    import sys
    from cubinrun.launcher import build_launcher
    module = build_launcher(open(sys.argv[1]).read(), sys.argv[2])
    module.launch(module.Config(0xF00D, (32,)), 1, 1, 1, 0, 7)
    print(module.__file__)
""")


def test_the_launcher_is_a_windows_extension_and_drives_the_fake_driver_dll(tmp_path):
    with fake_driver_env(tmp_path) as fake:
        assert fake.path.suffix == ".dll" and fake.path.read_bytes()[:2] == b"MZ"
        module = load_launcher(["u32", "*fp32"])
        path = Path(module.__file__)
        assert path.suffix == ".pyd" and path.read_bytes()[:2] == b"MZ"
        assert Path(os.environ["CUBINRUN_CACHE_DIR"]) in path.parents
        fake.set_param_sizes([4, 8])
        module.launch(module.Config(0xBEEF, (64,)), 3, 1, 1, 0, 0x12345678, 0x1000)
        [launch] = fake.launches()
    assert (launch.function, launch.grid, launch.block) == (0xBEEF, (3, 1, 1), (64, 1, 1))
    assert launch.params == [(0x12345678).to_bytes(4, "little"), (0x1000).to_bytes(8, "little")]


def test_the_compiler_is_found_and_links_the_interpreter_dll():
    compiler = find_compiler()
    assert compiler.windows and compiler.target == "win_amd64"
    assert python_dll().is_file()


def test_the_cache_lives_under_local_app_data(monkeypatch):
    monkeypatch.delenv("CUBINRUN_CACHE_DIR")
    assert cache.cache_root() == Path(os.environ["LOCALAPPDATA"]) / "cubinrun"


def _launch_in_subprocess(tmp_path, source_file, name, fake, record):
    env = {**os.environ, "CUBINRUN_LIBCUDA": str(fake.path), "FAKECUDA_RECORD": str(record),
           "FAKECUDA_PARAM_SIZES": "4"}
    return subprocess.run([sys.executable, "-c", LAUNCH, str(source_file), name], cwd=REPO,
                          env=env, capture_output=True, text=True)


def test_a_loaded_launcher_is_locked_and_another_process_still_builds_and_launches(
        tmp_path, monkeypatch):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    name = module_name_for(["i32"]) + "_locked"
    source_file = tmp_path / "launcher.c"
    source_file.write_text(generate_source(["i32"], module_name=name))
    module = build_launcher(source_file.read_text(), name)         # loaded here: locked
    path = Path(module.__file__)
    with pytest.raises(PermissionError):
        path.unlink()
    ref = path.with_name(path.name.split(".")[0] + "." + path.name.split(".")[1] + ".ref")
    ref.write_text("0" * 64 + " 1 " + path.name + "\n")             # a ref that no longer matches
    fake = shared_fake_driver(tmp_path)
    record = tmp_path / "launches"
    done = _launch_in_subprocess(tmp_path, source_file, name, fake, record)
    assert done.returncode == 0, done.stderr
    assert path.exists()                                            # never replaced nor deleted
    [launch] = recorded_launches(record, [4])
    assert launch.params == [(7).to_bytes(4, "little")]


def test_a_damaged_launcher_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("CUBINRUN_CACHE_DIR", str(tmp_path / "cache"))
    name = module_name_for(["i32"]) + "_damaged"
    source_file = tmp_path / "launcher.c"
    source_file.write_text(generate_source(["i32"], module_name=name))
    fake = shared_fake_driver(tmp_path)
    record = tmp_path / "launches"
    first = _launch_in_subprocess(tmp_path, source_file, name, fake, record)
    assert first.returncode == 0, first.stderr
    built = Path(first.stdout.strip())
    data = bytearray(built.read_bytes())                            # not loaded anywhere now
    middle = len(data) // 2
    data[middle:middle + 256] = bytes(b ^ 0xFF for b in data[middle:middle + 256])
    built.write_bytes(data)
    again = _launch_in_subprocess(tmp_path, source_file, name, fake, record)
    assert again.returncode == 0, again.stderr
    rebuilt = Path(again.stdout.strip())
    assert rebuilt.read_bytes() != bytes(data)
    assert len(recorded_launches(record, [4])) == 2


def _cli(tmp_path, *args):
    """`python -m cubinrun ARGS` as a user runs it: no fake driver, its own cache."""
    env = {k: v for k, v in os.environ.items() if k != "CUBINRUN_LIBCUDA"}
    env["CUBINRUN_CACHE_DIR"] = str(tmp_path / "cache")
    return subprocess.run([sys.executable, "-m", "cubinrun", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)


def _launcher_files(tmp_path):
    folder = tmp_path / "cache" / "launchers"
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} if folder.is_dir() else {}


def test_the_cli_builds_launchers_then_reuses_them_and_names_nvcuda_dll(tmp_path):
    """What a Windows user does first, with whichever compiler discovery finds:
    dry runs of a CUDA and a Triton spec build their launchers, a second dry
    run compiles nothing, and a launch without a driver says nvcuda.dll is missing."""
    specs = ["configs/vector_add.yaml", "configs/triton_add.yaml"]
    first = _cli(tmp_path, "launch", "--dry-run", *specs)
    assert first.returncode == 0, first.stdout + first.stderr
    built = _launcher_files(tmp_path)
    assert sum(name.endswith(".pyd") for name in built) == 2, built
    again = _cli(tmp_path, "launch", "--dry-run", *specs)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _launcher_files(tmp_path) == built       # no file written: no ref, no .pyd
    no_driver = _cli(tmp_path, "launch", "configs/vector_add.yaml")
    assert no_driver.returncode == 4, no_driver.stdout + no_driver.stderr
    assert "nvcuda.dll" in no_driver.stderr and "Traceback" not in no_driver.stderr
    assert len(no_driver.stderr.strip().splitlines()) == 1, no_driver.stderr
