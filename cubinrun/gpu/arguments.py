"""Turn bound slots into the Python values the generated launcher takes:
device pointers (ints), numbers, 128-byte tensor maps, and the bytes of
structs passed by value."""
from __future__ import annotations

from .buffers import DeviceMemory
from ..plan.packing import pack_struct
from ..signature import leaf_size
from ..plan.slots import Slot
from .tma import encode


def launcher_values(slots: list[Slot], memory: DeviceMemory) -> list:
    values = []
    for slot in slots:
        if slot.kind == "buffer":
            values.append(memory.buffers[slot.name].pointer + slot.at)
        elif slot.kind == "null":
            values.append(0)
        elif slot.kind == "scalar":
            values.append(slot.value)
        elif slot.kind == "desc_base":
            values.append(memory.buffers[slot.desc.buffer].pointer)
        elif slot.kind == "struct":
            values.append(pack_struct(leaf_size(slot.leaf.type), slot.members,
                                      lambda name: memory.buffers[name].pointer))
        elif slot.kind == "tma":
            buffer = memory.buffers[slot.desc.buffer]
            values.append(encode(slot.desc, buffer.spec, buffer.pointer, slot.meta))
        else:
            raise AssertionError(f"unknown slot kind {slot.kind}")
    return values
