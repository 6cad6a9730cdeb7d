"""`{into: NAME, at: K}`: a pointer (top-level or a struct's member) into another
pointer's buffer, as captured programs pass them (two tensors of one allocation,
TensorIterator's pointers inside a struct)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from cubinrun.errors import SpecError
from cubinrun.gpu.arguments import launcher_values
from cubinrun.plan.make import make_plan
from cubinrun.plan.packing import pack_struct
from cubinrun.specfile import BufferRef, load_spec

SPEC = """\
kernel: {cubin: k.cubin, name: k}
signature:
  x: "*fp32"
  y: "*fp32"
  p: struct[i32, *u8, *u8]
args:
  x: {shape: [64], dtype: u8}
  y: {into: x, at: AT}
  p: [3, {into: x, at: 32}, {shape: [8]}]
vars: {AT: 16}
grid: [1]
"""


def test_aliases_point_into_the_named_buffer_at_their_byte_offset(write_spec):
    spec = load_spec(write_spec(SPEC))
    assert set(spec.buffers) == {"x", "p[2]"}          # an alias has no buffer of its own
    assert spec.args[1] == BufferRef("y", "x", 16)
    plan = make_plan(spec)
    memory = SimpleNamespace(buffers={"x": SimpleNamespace(pointer=0x1000),
                                      "p[2]": SimpleNamespace(pointer=0x2000)})
    values = launcher_values(plan.slots, memory)
    assert values[:2] == [0x1000, 0x1010]
    struct = values[2]
    assert int.from_bytes(struct[8:16], "little") == 0x1020
    assert int.from_bytes(struct[16:24], "little") == 0x2000
    assert "buffer x + 16 bytes" in plan.slots[1].describe()


def test_pack_struct_adds_the_members_offset():
    member = SimpleNamespace(kind="buffer", value="a", offset=0, at=24, type="*u8")
    assert pack_struct(8, [member], lambda name: 0x100) == (0x118).to_bytes(8, "little")


@pytest.mark.parametrize("edit, field, fragment", [
    (("at: AT", "at: 65"), "args.y.at", "past the end of x (64 bytes)"),
    (("{into: x, at: AT}", "{into: z}"), "args.y.into", "is not a buffer"),
    (("{into: x, at: AT}", "{into: x, shape: [1]}"), "args.y", "shape"),
    (("at: AT", "at: -1"), "args.y.at", ">="),
])
def test_alias_errors_name_the_field(write_spec, edit, field, fragment):
    path = write_spec(SPEC.replace(*edit))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert field in str(err.value) and fragment in str(err.value), str(err.value)
    assert err.value.line is not None


def test_a_reproducer_passes_the_alias_s_address(write_spec):
    from cubinrun.debug.repro import _params
    spec = load_spec(write_spec(SPEC))
    source = _params(make_plan(spec), list(spec.buffers))
    assert "CUdeviceptr p1 = dev[0] + 16;" in source
    assert "CUdeviceptr a = dev[0] + 32; memcpy(p2 + 8, &a, 8);" in source
