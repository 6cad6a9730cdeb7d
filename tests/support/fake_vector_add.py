"""The fake driver's vector add: its kernel adds x and y into out when the
launch is waited for, with staging slots and blocks small so that a few
thousand elements span many of them (the data-at-scale tests)."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from cubinrun.gpu import transfer
from cubinrun.hostdata import check, values as hostdata
from support.repo import CONFIGS, REPO

BIG_N = 50_000                  # elements: many slots and blocks at the sizes below


@pytest.fixture
def vector_add(device, fake_libcuda, monkeypatch):
    """The fake's kernel adds x and y into out when the launch is waited for;
    slots and blocks small so that N spans many of them."""
    monkeypatch.setattr(transfer, "SLOT_BYTES", 16 << 10)
    monkeypatch.setattr(hostdata, "CHUNK", 1000)
    monkeypatch.setattr(check, "CHUNK", 1000)
    done = [0]
    wrong: dict[int, float] = {}

    def synchronize(stream):
        if fake_libcuda.launch_count > done[0]:
            done[0] = fake_libcuda.launch_count
            params = fake_libcuda.launches()[-1].params
            x, y, out = (int.from_bytes(p, "little") for p in params[:3])
            n = int.from_bytes(params[3][:4], "little")

            def view(address: int) -> np.ndarray:
                return np.ctypeslib.as_array((ctypes.c_float * n).from_address(address))
            np.add(view(x), view(y), out=view(out))
            for i, v in wrong.items():
                view(out)[i] = v
            device.play(done[0], view(x), view(y), view(out))
    monkeypatch.setattr(device, "cuStreamSynchronize", synchronize)
    device.wrong = wrong
    device.play = lambda run, x, y, out: None       # more of the kernel, by launch number
    return device


def vector_add_copy(tmp_path) -> Path:
    path = tmp_path / "va.yaml"
    source = (CONFIGS / "vector_add.yaml").read_text().replace("../kernels", str(REPO / "kernels"))
    path.write_text(source)
    return path
