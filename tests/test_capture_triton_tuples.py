"""The Triton hook records a tuple argument (`ptrs: tuple` of two pointers and a
constexpr, tests/fixtures/triton/3.6.0/tuple_kernel): its elements but the
constexpr, as the entry's parameters are; the spec gives the tuple as a list
whose pointers are buffers (or aliases into one), and it dry-runs against the
entry's cubin."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import yaml

from conftest import REPO
from test_capture import Memory, Tensor, hook  # noqa: F401 (the hook fixture)
from test_cli import run

from cubinrun.capture.selection import Selection
from cubinrun.capture.session import write_folder
from cubinrun.capture.summary import Summary

ENTRY = REPO / "tests" / "fixtures" / "triton" / "3.6.0" / "tuple_kernel"


class TupleLauncher:
    """tuple_kernel: ptrs[1] = ptrs[0] * ptrs[2] for the first n elements."""

    def __init__(self, src, metadata):
        pass

    def __call__(self, gx, gy, gz, stream, function, *args):
        (source, target, factor), n = args[4:6]
        target.array()[:n] = source.array()[:n] * factor


def test_a_tuple_argument_becomes_a_list_without_its_constexpr(hook, tmp_path, capsys):  # noqa: F811
    entry_hash = json.loads((ENTRY / "tuple_kernel.json").read_text())["hash"]
    stage = tmp_path / "stage"
    hook._state = hook.Capture(str(stage), {"skip": 0}, memory=Memory())
    hook._state.entries[entry_hash] = {p.name: str(p) for p in ENTRY.iterdir()}
    launcher_cls = type("TupleLauncher", (TupleLauncher,), {})
    hook.patch_launcher(launcher_cls)
    src = SimpleNamespace(fn=SimpleNamespace(arg_names=["ptrs", "n", "BLOCK"]),
                          signature={"ptrs": ("*fp32", "*fp32", "constexpr"), "n": "i32",
                                     "BLOCK": "constexpr"},
                          constants={(0, 2): 3.0, "BLOCK": 256})
    launcher = launcher_cls(src, SimpleNamespace(name="tuple_kernel", hash=entry_hash))
    source, target = Tensor(np.arange(1024)), Tensor(np.zeros(1024))
    launcher(4, 1, 1, 0, 0, "kmeta", "lmeta", None, None, (source, target, 3.0), 1024)
    assert np.array_equal(target.array(), 3 * np.arange(1024))     # the program's result
    summary = Summary(["python3", "prog.py"])
    write_folder(stage, summary, Selection(), lambda line: None)
    document = json.loads((stage / "capture.json").read_text())
    assert document["captured"] == 1, document["skipped"]
    spec = yaml.safe_load((stage / document["specs"][0]["spec"]).read_text())
    assert len(spec["args"]["ptrs"]) == 2 and spec["args"]["n"] == 1024
    first, second = spec["args"]["ptrs"]
    assert np.array_equal(np.load(stage / first["init"]["file"]), np.arange(1024))
    assert np.array_equal(np.load(stage / spec["check"]["ptrs[1]"]["file"]),
                          3 * np.arange(1024))
    code, out, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(stage))
    assert code == 0, err
