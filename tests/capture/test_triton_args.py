"""The Triton hook records a tuple argument (`ptrs: tuple` of two pointers and a
constexpr, tests/fixtures/triton/3.6.0/tuple_kernel) by its elements but the
constexpr, as the entry's parameters are, and a host tensor descriptor
(tma_copy_kernel) as a descriptor of a buffer of its own shape; the specs dry-run
against the entries' cubins."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import yaml

from support.capture_fakes import Memory, Storage, Tensor
from support.cli import run
from support.repo import FIXTURES

from cubinrun.capture.selection import Selection
from cubinrun.capture.session import write_folder
from cubinrun.capture.summary import Summary

ENTRY = FIXTURES / "triton" / "3.6.0" / "tuple_kernel"


def installed(hook, stage, entry, cls, signature: dict, constants: dict):
    """A launcher of `cls` for the fixture entry, the hook installed over it."""
    name = entry.name
    entry_hash = json.loads((entry / f"{name}.json").read_text())["hash"]
    hook._state = hook.Capture(str(stage), {"skip": 0}, memory=Memory())
    hook._state.entries[entry_hash] = {p.name: str(p) for p in entry.iterdir()}
    launcher_cls = type(cls.__name__, (cls,), {})
    hook.patch_launcher(launcher_cls)
    src = SimpleNamespace(fn=SimpleNamespace(arg_names=list(signature)), signature=signature,
                          constants=constants)
    return launcher_cls(src, SimpleNamespace(name=name, hash=entry_hash))


class TupleLauncher:
    """tuple_kernel: ptrs[1] = ptrs[0] * ptrs[2] for the first n elements."""

    def __init__(self, src, metadata):
        pass

    def __call__(self, gx, gy, gz, stream, function, *args):
        (source, target, factor), n = args[4:6]
        target.array()[:n] = source.array()[:n] * factor


def test_a_tuple_argument_becomes_a_list_without_its_constexpr(hook, tmp_path, capsys):
    stage = tmp_path / "stage"
    launcher = installed(hook, stage, ENTRY, TupleLauncher,
                         {"ptrs": ("*fp32", "*fp32", "constexpr"), "n": "i32",
                          "BLOCK": "constexpr"}, {(0, 2): 3.0, "BLOCK": 256})
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


TMA_ENTRY = FIXTURES / "triton" / "3.6.0" / "tma_copy_kernel"


class HalfTensor(Tensor):
    """A contiguous fp16 tensor over a storage of its own."""

    def __init__(self, values):
        values = np.asarray(values, dtype=np.float16)
        self.storage, self.offset, self.n = Storage(values.nbytes), 0, values.size
        self.array()[:] = values.ravel()

    def array(self):
        return np.frombuffer(self.storage.bytes, np.float16, self.n, self.offset)

    def element_size(self):
        return 2


class CopyLauncher:
    """tma_copy_kernel: out_desc's tensor = in_desc's."""

    def __init__(self, src, metadata):
        pass

    def __call__(self, gx, gy, gz, stream, function, *args):
        source, target = args[4].base, args[5].base
        target.array()[:] = source.array()


def test_a_tensor_descriptor_becomes_a_descriptor_of_a_buffer_of_its_shape(hook, tmp_path,
                                                                          capsys):
    stage = tmp_path / "stage"
    signature = {"in_desc": "tensordesc<fp16[64, 64]>", "out_desc": "tensordesc<fp16[64, 64]>",
                 "M": "i32", "N": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}
    launcher = installed(hook, stage, TMA_ENTRY, CopyLauncher, signature,
                         {"BLOCK_M": 64, "BLOCK_N": 64})
    rows, cols = 128, 64
    source = HalfTensor(np.arange(rows * cols) % 251)
    target = HalfTensor(np.zeros(rows * cols))

    def descriptor(tensor, padding="zero"):
        return SimpleNamespace(base=tensor, shape=[rows, cols], strides=[cols, 1],
                               block_shape=[64, 64], padding=padding)

    launcher(2, 1, 1, 0, 0, "kmeta", "lmeta", None, None, descriptor(source),
             descriptor(target, "nan"), rows, cols)
    summary = Summary(["python3", "prog.py"])
    write_folder(stage, summary, Selection(), lambda line: None)
    document = json.loads((stage / "capture.json").read_text())
    assert document["captured"] == 1, document["skipped"]
    spec = yaml.safe_load((stage / document["specs"][0]["spec"]).read_text())
    in_desc, out_desc = spec["args"]["in_desc"], spec["args"]["out_desc"]
    assert in_desc["buffer"]["shape"] == [rows, cols] and in_desc["buffer"]["dtype"] == "fp16"
    assert "padding" not in in_desc and out_desc["padding"] == "nan"
    saved = np.load(stage / in_desc["buffer"]["init"]["file"])
    assert saved.shape == (rows, cols) and saved[1, 3] == (cols + 3) % 251
    assert np.array_equal(np.load(stage / spec["check"]["out_desc"]["file"]), saved)
    code, out, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", str(stage))
    assert code == 0, err
