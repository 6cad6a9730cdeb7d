"""Checks of a spec against the binary and the TMA encoding parameters,
as pure functions (the GPU tests run the same paths on the H200)."""
from __future__ import annotations

import pytest

from cubinrun.gpu import tma
from cubinrun.dtypes import ELEMENT_TYPES
from cubinrun.errors import SpecError
from cubinrun.specfile import BufferArg, DescArg, Init
from cubinrun.binary.validate import arch_runs_on, check_arch


@pytest.mark.parametrize("cubin_sm, variant, device_sm, runs", [
    (90, "", 90, True), (90, "a", 90, True), (80, "", 86, True), (86, "", 80, False),
    (90, "a", 100, False), (90, "", 100, False), (100, "f", 103, True), (100, "a", 103, False),
    (120, "", 120, True), (75, "", 90, False),
])
def test_which_cubins_run_on_which_devices(cubin_sm, variant, device_sm, runs):
    assert arch_runs_on(cubin_sm, variant, device_sm) is runs


def test_arch_error_names_both_archs():
    class Info:
        sm, variant, arch = 90, "a", "sm_90a"
    with pytest.raises(SpecError, match="the cubin is for sm_90a, which cannot run on B200 "
                                        r"\(sm_100\)") as err:
        check_arch(Info, "sm_100", "B200", "kernel.triton")
    assert err.value.field == "kernel.triton"


def buffer(dtype: str, shape) -> BufferArg:
    return BufferArg("a", ELEMENT_TYPES[dtype], tuple(shape), Init("zeros"))


def test_spec_fields_decide_without_triton_metadata():
    desc = DescArg("d", "nvTmaDesc", "a", (64, 32), swizzle=128, padding="nan")
    p = tma.tma_params(desc, buffer("bf16", (256, 512)), None)
    assert p == tma.TmaParams(data_type=9, elem_size=2, shape=(256, 512), block=(64, 32),
                              swizzle=3, oob_nan=True)
    p = tma.tma_params(DescArg("d", "nvTmaDesc", "a", (8,)), buffer("i32", (100,)), None)
    assert (p.data_type, p.swizzle, p.oob_nan) == (3, 0, False)


def test_triton_metadata_follows_the_seed():
    meta = {"swizzle": 2, "elem_size": 1, "elem_type": 9, "block_size": [128, 64],
            "fp4_padded": True}
    p = tma.tma_params(DescArg("d", "tensordesc", "a", (128, 64)), buffer("u8", (512, 64)), meta)
    # device enum 9 is the host's 8; fp4 padding doubles the innermost dim
    assert p == tma.TmaParams(data_type=8, elem_size=1, shape=(512, 128), block=(128, 64),
                              swizzle=2, oob_nan=False)


def test_encode_passes_dims_innermost_first_and_byte_strides(monkeypatch):
    seen = {}

    def fake_encode(data_type, address, dims, strides, box, swizzle, oob_nan, context):
        seen.update(data_type=data_type, address=address, dims=dims, strides=strides, box=box,
                    swizzle=swizzle, context=context)
        return bytes(128)
    monkeypatch.setattr(tma.driver, "encode_tiled_tensor_map", fake_encode)
    desc = DescArg("d", "nvTmaDesc", "a", (2, 16, 32))
    assert tma.encode(desc, buffer("fp16", (4, 64, 128)), 0x1000, None) == bytes(128)
    assert seen["dims"] == [128, 64, 4] and seen["box"] == [32, 16, 2]
    assert seen["strides"] == [128 * 2, 128 * 64 * 2] and seen["address"] == 0x1000
    assert seen["context"].startswith("args.d:")


def test_block_rank_must_match_the_buffer():
    with pytest.raises(SpecError, match="does not match the 2-D buffer") as err:
        tma.encode(DescArg("d", "nvTmaDesc", "a", (8,)), buffer("fp32", (8, 8)), 0, None)
    assert err.value.field == "args.d.block"
