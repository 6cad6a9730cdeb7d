"""The cubins inside an image capture saved (a module or a CUDA library's
fatbin): compressed entries unpacked, through the system's libzstd when the
zstandard package is missing, and nothing from an image that holds none."""
from __future__ import annotations

import sys

import pytest
from support.repo import FIXTURES

from cubinrun.binary.cubin import read_cubin
from cubinrun.capture import module_images
from cubinrun.capture.module_images import cubins_in

CUBINS = FIXTURES / "cubins"
# Capture is Linux's (CUDA_INJECTION64_PATH): Windows has no libzstd to fall back on,
# and the Windows test environment does not install the capture extra's zstandard.
linux_only = pytest.mark.skipif(sys.platform == "win32", reason="capture is Linux only")


@linux_only
def test_a_compressed_fatbin_gives_its_cubin_unpacked():
    cubins = cubins_in((CUBINS / "cluster.compressed.fatbin").read_bytes())
    assert [read_cubin(c).arch for c in cubins] == ["sm_90"]
    assert "fixed_block" in [k.name for k in read_cubin(cubins[0]).kernels]


@linux_only
def test_libzstd_unpacks_the_padded_frame_without_the_zstandard_package():
    from cubinrun.binary.cubin import read_fatbin
    entry = read_fatbin((CUBINS / "cluster.compressed.fatbin").read_bytes())[0]
    unpacked = module_images._unzstd_with_libzstd(entry.payload)
    assert unpacked is not None and unpacked[:4] == b"\x7fELF" and len(unpacked) == 7072


def test_plain_fatbins_cubins_and_other_bytes():
    fatbin = (CUBINS / "params.fatbin").read_bytes()
    assert [read_cubin(c).arch for c in cubins_in(fatbin)] == ["sm_80", "sm_90a"]
    cubin = (CUBINS / "params.sm_90.cubin").read_bytes()
    assert cubins_in(cubin) == [cubin]
    assert cubins_in(fatbin[:5000]) == [] and cubins_in(b"not an image") == []
