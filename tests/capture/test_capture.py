"""`cubinrun capture` without a GPU: the Triton hook against a fake launcher and
fake tensors, the raw records turned into specs (relocation, dedup, limits,
determinism), the specs dry-run against the real binaries, the program's run
(environment, exit code, output untouched) and the errors."""
from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from support.platforms import skip_on_windows
from support.repo import REPO
from support.cli import run
from support.capture_fakes import Memory, Storage, Tensor

from cubinrun.capture import params as capture_params
from cubinrun.capture.program import child_environment, run_program
from cubinrun.capture.selection import Selection, parse_bytes
from cubinrun.capture.session import (CaptureOptions, capture, check_output_folder,
                                      write_folder)
from cubinrun.capture.summary import Summary
from cubinrun.errors import UsageError
from cubinrun.specfile import load_spec

ENTRY = REPO / "tests" / "fixtures" / "triton" / "3.6.0" / "add_kernel"
STRUCTS_CUBIN = REPO / "kernels" / "build" / "structs.sm_90.cubin"


class AddLauncher:
    """Triton's CudaLauncher as the hook sees it; launching adds x and y."""
    noise = 0.0

    def __init__(self, src, metadata):
        self.launches = 0

    def __call__(self, gx, gy, gz, stream, function, *args):
        x, y, out, n = args[4:8]
        self.launches += 1
        out.array()[:n] = x.array()[:n] + y.array()[:n] + self.noise * self.launches


def add_src(hash_: str):
    names = ["x_ptr", "y_ptr", "out_ptr", "n", "BLOCK"]
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32",
                 "BLOCK": "constexpr"}
    return (SimpleNamespace(fn=SimpleNamespace(arg_names=names), signature=signature,
                            constants={"BLOCK": 1024}),
            SimpleNamespace(name="add_kernel", hash=hash_))


def installed(hook, folder: Path, cls=AddLauncher, **options):
    entry_hash = json.loads((ENTRY / "add_kernel.json").read_text())["hash"]
    hook._state = hook.Capture(str(folder), {"skip": 0, **options}, memory=Memory())
    hook._state.entries[entry_hash] = {p.name: str(p) for p in ENTRY.iterdir()}
    launcher_cls = type(cls.__name__, (cls,), {})
    hook.patch_launcher(launcher_cls)
    return launcher_cls(*add_src(entry_hash))


def launch(launcher, x, y, out, n, with_constexpr=False):
    extra = (1024,) if with_constexpr else ()
    launcher(-(-n // 1024), 1, 1, 0, 0, "kmeta", "lmeta", None, None, x, y, out, n, *extra)


def test_the_triton_hook_captures_each_distinct_launch_once_and_the_specs_dry_run(
        hook, tmp_path, capsys):
    stage = tmp_path / "stage"
    launcher = installed(hook, stage)
    x, y = Tensor(np.arange(4096)), Tensor(np.full(4096, 0.5))
    out = Tensor(np.zeros(4096))
    for _ in range(3):                      # a loop: the same launch, captured once
        launch(launcher, x, y, out, 4096)
    assert launcher.launches == 3 + 1       # and run once more for determinism
    assert np.array_equal(out.array(), np.arange(4096) + 0.5)   # the program's result stands
    small = [Tensor(np.ones(2048)) for _ in range(3)]
    launch(launcher, *small, 2048, with_constexpr=True)      # constexprs passed too
    summary = Summary(["python3", "prog.py"])
    write_folder(stage, summary, Selection(), lambda line: None)
    document = json.loads((stage / "capture.json").read_text())
    assert document["captured"] == 2 and document["launches_seen"] == 4
    assert any(s["count"] == 2 and "already seen" in s["reason"] for s in document["skipped"])
    assert not (stage / "raw").exists()
    specs = sorted(stage.glob("*.yaml"))
    assert [p.name for p in specs] == ["0000-add_kernel.yaml", "0001-add_kernel.yaml"]
    first = yaml.safe_load(specs[0].read_text())
    assert first["constants"] == {"BLOCK": 1024} and first["grid"] == [4, 1, 1]
    assert first["check"] == {"out_ptr": {"file": "data/0000-add_kernel/out_ptr.expected.npy",
                                          "exact": True}}
    assert specs[0].read_text().startswith("# Captured by cubinrun capture from: python3 prog.py")
    spec = load_spec(specs[0])
    assert np.array_equal(np.load(spec.buffers["x_ptr"].init.path), np.arange(4096))
    assert np.array_equal(np.load(stage / first["check"]["out_ptr"]["file"]),
                          np.arange(4096) + 0.5)
    assert not np.load(spec.buffers["out_ptr"].init.path).any()     # as before the launch
    code, out_text, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(stage))
    assert code == 0, err


def test_pointers_into_one_storage_become_one_buffer_and_aliases(hook, tmp_path):
    stage = tmp_path / "stage"
    launcher = installed(hook, stage)
    storage = Storage(3 * 4096 * 4)
    x = Tensor(np.arange(4096), storage, 0)
    y = Tensor(np.ones(4096), storage, 4096 * 4)
    out = Tensor(np.zeros(4096), storage, 2 * 4096 * 4)
    launch(launcher, x, y, out, 4096)
    write_folder(stage, Summary(["prog"]), Selection(), lambda line: None)
    spec = yaml.safe_load(next(stage.glob("*.yaml")).read_text())
    assert spec["args"]["y_ptr"] == {"into": "x_ptr", "at": 4096 * 4}
    assert spec["args"]["out_ptr"] == {"into": "x_ptr", "at": 2 * 4096 * 4}
    assert spec["args"]["x_ptr"]["shape"] == [3 * 4096]
    assert list(spec["check"]) == ["x_ptr"]          # the one buffer the launch changed
    expected = np.load(stage / spec["check"]["x_ptr"]["file"])
    assert np.array_equal(expected[2 * 4096:], np.arange(4096) + 1)


def test_a_launch_that_differs_when_repeated_gets_a_tolerance(hook, tmp_path):
    class Noisy(AddLauncher):
        noise = 1e-3
    stage = tmp_path / "stage"
    launcher = installed(hook, stage, Noisy)
    x, y, out = (Tensor(np.ones(1024)) for _ in range(3))
    launch(launcher, x, y, out, 1024)
    assert np.allclose(out.array(), 2.001)                 # the first launch's result kept
    write_folder(stage, summary := Summary(["prog"]), Selection(), lambda line: None)
    check = yaml.safe_load(next(stage.glob("*.yaml")).read_text())["check"]["out_ptr"]
    assert "exact" not in check and check["atol"] == pytest.approx(4e-3, rel=1e-3)
    assert summary.specs[0]["deterministic"] is False and summary.specs[0]["tolerance"]


@pytest.mark.parametrize("options, captured, reason", [
    ({"limit": 1}, 1, "--limit"),
    ({"skip": 2}, 1, "--skip"),
    ({"kernel": "^mm_"}, 0, "--kernel does not match"),
    ({"max_launch_bytes": 1000}, 0, "--max-bytes"),
    ({"max_total_bytes": 2 * 3 * 4096 + 100}, 1, "--max-bytes"),
])
def test_selection_in_the_process(hook, tmp_path, options, captured, reason):
    stage = tmp_path / "stage"
    launcher = installed(hook, stage, **options)
    for n in (1024, 2048, 3072):
        launch(launcher, *(Tensor(np.ones(n)) for _ in range(3)), n)
    write_folder(stage, summary := Summary(["prog"]), Selection(), lambda line: None)
    assert len(summary.specs) == captured
    assert any(s.reason.startswith(reason) for s in summary.skipped), summary.skipped


def test_the_hook_patches_triton_when_the_program_imports_it(hook, tmp_path, monkeypatch):
    package = tmp_path / "fake_site" / "triton" / "backends" / "nvidia"
    package.mkdir(parents=True)
    for folder in (package, package.parent, package.parent.parent):
        (folder / "__init__.py").write_text("")
    (package / "driver.py").write_text("class CudaLauncher:\n    def __call__(self, *a): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "fake_site"))
    for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setenv("CUBINRUN_CAPTURE_DIR", str(tmp_path / "stage"))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))     # its finders go afterwards
    hook.install()
    try:
        from triton.backends.nvidia.driver import CudaLauncher
        assert CudaLauncher._cubinrun_patched
    finally:                                # the fake Triton must not outlive the test
        for name in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
            del sys.modules[name]


# --- CUPTI's records: raw parameter bytes -------------------------------------------
def cupti_record(folder: Path) -> None:
    """A struct_saxpy launch (kernels/structs.cu) as the injection library writes it:
    `Saxpy p` holds x and y, 64 bytes apart in one allocation."""
    process = folder / "raw" / "cupti-100"
    (process / "modules").mkdir(parents=True)
    (process / "modules" / "m1.cubin").write_bytes(STRUCTS_CUBIN.read_bytes())
    launch_dir = process / "00000"
    launch_dir.mkdir()
    base, sums = 0x7f0000200000, 0x7f0000400000
    p = struct.pack("<if", 16, 2.0) + struct.pack("<QQ", base, base + 64)
    scale = struct.pack("<4f", 1, 2, 3, 4)
    taps = struct.pack("<bxhhhxxxxxxx", 1, 2, 3, 4)[:8] + struct.pack("<d", 0.5)
    params = [(0, p), (32, scale), (48, taps), (64, struct.pack("<Q", sums)),
              (72, struct.pack("<Q", sums + 8))]
    region = np.arange(32, dtype=np.float32).tobytes()
    after = np.array(list(range(16)) + [2 * i + 16 + i for i in range(16)], np.float32).tobytes()
    (launch_dir / "r0.before").write_bytes(region)
    (launch_dir / "r0.after").write_bytes(after)
    (launch_dir / "r1.before").write_bytes(bytes(16))
    (launch_dir / "r1.after").write_bytes(struct.pack("<dd", 1234, 7.5))
    record = {"source": "cupti", "pid": 100, "program_launch": 3, "kernel": "struct_saxpy",
              "module": "modules/m1.cubin", "key": "00ff", "grid": [1, 1, 1],
              "block": [256, 1, 1], "shared": 0, "cooperative": False, "cluster": [0, 0, 0],
              "deterministic": True,
              "params": [{"offset": o, "size": len(b), "hex": b.hex()} for o, b in params],
              "pointers": [{"param": 0, "offset": 8, "region": 0, "at": 0},
                           {"param": 0, "offset": 16, "region": 0, "at": 64},
                           {"param": 3, "offset": 0, "region": 1, "at": 0},
                           {"param": 4, "offset": 0, "region": 1, "at": 8}],
              "regions": [{"size": 128, "before": "r0.before", "after": "r0.after"},
                          {"size": 16, "before": "r1.before", "after": "r1.after"}]}
    (launch_dir / "record.json").write_text(json.dumps(record))
    (process / "summary.json").write_text(json.dumps({"launches_seen": 5, "skipped": [
        {"kernel": "other", "reason": "parameters passed through `extra`", "count": 4}]}))


def test_cuda_parameters_become_scalars_words_and_structs_with_relocated_pointers(
        tmp_path, capsys):
    cupti_record(tmp_path)
    summary = Summary(["./app"])
    write_folder(tmp_path, summary, Selection(), lambda line: None)
    spec_path = next(tmp_path.glob("*.yaml"))
    spec = yaml.safe_load(spec_path.read_text())
    assert spec["signature"] == {"a0": "struct[u64, *u8, *u8]", "a1": "u64[2]",
                                 "a2": "u64[2]", "a3": "*u8", "a4": "*u8"}
    assert spec["args"]["a0"][2] == {"into": "a0[1]", "at": 64}
    assert spec["args"]["a4"] == {"into": "a3", "at": 8}
    assert spec["kernel"]["name"] == "struct_saxpy" and spec["block"] == [256, 1, 1]
    assert set(spec["check"]) == {"a0[1]", "a3"}
    assert summary.launches_seen == 5 and summary.skipped[0].count == 4
    code, out, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(spec_path))
    assert code == 0, err


def test_a_launch_the_format_cannot_express_is_listed_and_leaves_no_files(tmp_path):
    cupti_record(tmp_path)
    record = tmp_path / "raw" / "cupti-100" / "00000" / "record.json"
    data = json.loads(record.read_text())
    for pointer in data["pointers"][:2]:
        pointer["at"] += 4                  # no pointer at its region's start
    record.write_text(json.dumps(data))
    write_folder(tmp_path, summary := Summary(["./app"]), Selection(), lambda line: None)
    assert not summary.specs and not list(tmp_path.glob("*.yaml"))
    assert not list((tmp_path / "data").iterdir())
    assert any("no pointer at the start" in s.reason for s in summary.skipped)


def test_words_keep_their_place_and_packed_structs_are_refused():
    assert capture_params._words(bytes(12), 4) == ("u32[3]", [0, 0, 0])
    assert capture_params._words(bytes(6), 2) == ("u16[3]", [0, 0, 0])
    assert capture_params._plain(b"\x01\x00", 0) == ("u16", 1)
    assert capture_params._plain(bytes(8), 4) == ("u32[2]", [0, 0])       # 4-aligned, not 8
    record = {"params": [{"offset": 0, "size": 12, "hex": "00" * 12}],
              "pointers": [{"param": 0, "offset": 0, "region": 0, "at": 0}]}
    with pytest.raises(capture_params.NotExpressible, match="multiple of 8"):
        capture_params.cuda_params(record)


# --- the program, the folder and the errors -----------------------------------------
def test_the_program_runs_unchanged_with_its_own_sitecustomize_and_exit_code(tmp_path, capfd):
    skip_on_windows("the hook comes in through PYTHONPATH, which an embeddable Python's ._pth "
                    "ignores (capture is for Linux: the CUPTI library is one too)")
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import sys; sys.stderr.write('own site\\n')\n")
    env = child_environment(tmp_path, Selection(limit=3), None, None, True, False,
                            base={**os.environ, "PYTHONPATH": str(own)})
    assert env["CUBINRUN_CAPTURE_LIMIT"] == "3" and "CUDA_INJECTION64_PATH" not in env
    program = "import sys, cubinrun_triton_hook; print('hello'); sys.exit(3)"
    code, wall = run_program([sys.executable, "-c", program], env)
    out, err = capfd.readouterr()
    assert (code, out, err) == (3, "hello\n", "own site\n")


def test_a_capture_keeps_what_it_has_when_the_program_fails(tmp_path, monkeypatch):
    out = tmp_path / "cap"
    options = CaptureOptions((sys.executable, "-c", "raise SystemExit(7)"), out, cupti=False)
    summary = capture(options, lambda line: None)
    assert summary.exit_code == 7
    assert json.loads((out / "capture.json").read_text())["exit_code"] == 7
    assert not list(tmp_path.glob(".cap.*"))         # nothing left beside it
    with pytest.raises(UsageError, match="exists; pass --force"):
        check_output_folder(out, force=False)
    capture(CaptureOptions(options.command, out, force=True, cupti=False), lambda line: None)


def test_force_leaves_a_folder_that_is_no_capture_alone(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(UsageError, match="not a capture folder"):
        check_output_folder(tmp_path / "mine", force=True)
    with pytest.raises(UsageError, match="no folder"):
        check_output_folder(tmp_path / "missing" / "out", force=False)


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    import errno
    from cubinrun.capture import session

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(session, "write_folder", full)
    out = tmp_path / "cap"
    with pytest.raises(UsageError, match="cannot write .*No space left on device"):
        capture(CaptureOptions((sys.executable, "-c", "pass"), out, cupti=False),
                lambda line: None)
    assert list(tmp_path.iterdir()) == []


def test_option_errors():
    assert parse_bytes("1G") == (1 << 30, 1 << 30)
    assert parse_bytes("512M,8G") == (512 << 20, 8 << 30)
    for bad in ("1Q", "1,2,3", ""):
        with pytest.raises(UsageError, match="--max-bytes"):
            parse_bytes(bad)
    with pytest.raises(UsageError, match="--kernel"):
        Selection(kernel="(")


def test_the_command_line_needs_a_program_and_a_gpu(capsys):
    code, out, err = run(capsys, "capture", "-o", "x")
    assert code == 2
    code, out, err = run(capsys, "capture", "-o", "x", "--max-bytes", "lots", "--", "true")
    assert code == 2 and "--max-bytes" in err


@pytest.mark.skipif(sys.platform == "win32", reason="CUDA_INJECTION64_PATH is Linux's")
def test_the_injection_library_compiles():
    from cubinrun.capture.injection_build import build_injection, header_dirs
    from cubinrun.errors import BuildError
    try:
        header_dirs()
    except BuildError as exc:
        pytest.skip(f"no CUPTI headers here: {exc}")
    library = build_injection()
    assert library.is_file() and build_injection() == library          # cached
    text = library.read_bytes()
    assert b"InitializeInjection" in text and b"cubinrun_capture_pause" in text


def test_the_replay_records_each_spec_s_outcome(hook, tmp_path):
    from cubinrun.capture.replay import replay
    stage = tmp_path / "stage"
    launcher = installed(hook, stage)
    launch(launcher, *(Tensor(np.ones(1024)) for _ in range(3)), 1024)
    write_folder(stage, summary := Summary(["prog"]), Selection(), lambda line: None)
    replay(stage, summary)                  # no GPU here: the run's own error is recorded
    outcome = summary.specs[0]["replay"]
    assert outcome["passed"] is False and outcome["error"], outcome
    assert not (stage / ".replay.jsonl").exists()
    assert json.loads(summary.to_json())["replayed_passing"] == 0


SAXPY = "__global__ void saxpy(int n, float a, const float* x, float* y)" \
        " { int i = threadIdx.x; if (i < n) y[i] += a * x[i]; }\n"


def test_a_cpp_kernel_s_raw_scalars_and_its_defining_module(tmp_path, capsys):
    """The module matched to the launch only names the kernel (H200, PyTorch: its
    specs failed with "it has none"): the module that defines it is taken; and the
    raw 4-byte scalars CUPTI hands over (C++ int and float) are reinterpreted."""
    source = tmp_path / "saxpy.cu"
    source.write_text(SAXPY)
    cubin = tmp_path / "saxpy.cubin"
    assert run(capsys, "compile", "--arch", "sm_90", str(source), "-o", str(cubin))[0] == 0
    name = "_Z5saxpyifPKfPf"
    process = tmp_path / "out" / "raw" / "cupti-7"
    (process / "modules").mkdir(parents=True)
    (process / "modules" / "m1.cubin").write_bytes(STRUCTS_CUBIN.read_bytes() + name.encode() + b"\0")
    (process / "modules" / "m2.cubin").write_bytes(cubin.read_bytes())
    launch_dir = process / "00000"
    launch_dir.mkdir()
    x, y = 0x7f0000200000, 0x7f0000400000
    params = [(0, struct.pack("<i", 16)), (4, struct.pack("<f", 2.0)), (8, struct.pack("<Q", x)),
              (16, struct.pack("<Q", y))]
    for region in ("r0", "r1"):
        (launch_dir / f"{region}.before").write_bytes(np.ones(16, np.float32).tobytes())
    (launch_dir / "r1.after").write_bytes(np.full(16, 3.0, np.float32).tobytes())
    record = {"source": "cupti", "pid": 7, "program_launch": 0, "kernel": name,
              "module": "modules/m1.cubin", "key": "01", "grid": [1, 1, 1], "block": [32, 1, 1],
              "shared": 0, "cooperative": False, "cluster": [0, 0, 0], "deterministic": True,
              "params": [{"offset": o, "size": len(b), "hex": b.hex()} for o, b in params],
              "pointers": [{"param": 2, "offset": 0, "region": 0, "at": 0},
                           {"param": 3, "offset": 0, "region": 1, "at": 0}],
              "regions": [{"size": 64, "before": "r0.before", "after": None},
                          {"size": 64, "before": "r1.before", "after": "r1.after"}]}
    (launch_dir / "record.json").write_text(json.dumps(record))
    (process / "summary.json").write_text(json.dumps({"launches_seen": 1, "skipped": []}))
    write_folder(tmp_path / "out", Summary(["./app"]), Selection(), lambda line: None)
    spec_path = next((tmp_path / "out").glob("*.yaml"))
    spec = yaml.safe_load(spec_path.read_text())
    assert spec["kernel"]["reinterpret"] == ["a0", "a1"]
    kernel_file = (tmp_path / "out" / spec["kernel"]["cubin"]).read_bytes()
    assert kernel_file == cubin.read_bytes()
    code, _, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(spec_path))
    assert code == 0, err
