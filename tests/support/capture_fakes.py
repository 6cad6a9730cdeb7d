"""What the Triton hook's tests give it in place of torch and the GPU: tensors
over byte storages of their own, and memory that reads and writes those bytes
(tests/capture/, with the `hook` fixture of tests/capture/conftest.py)."""
from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np


class Storage:
    next_address = 0x7f0000000000

    def __init__(self, nbytes: int):
        self.bytes = bytearray(nbytes)
        self.address = Storage.next_address
        Storage.next_address += 1 << 20

    def data_ptr(self):
        return self.address

    def nbytes(self):
        return len(self.bytes)


class Tensor:
    device = SimpleNamespace(type="cuda")

    def __init__(self, values, storage: Storage | None = None, offset: int = 0):
        values = np.asarray(values, dtype=np.float32)
        self.storage = storage or Storage(values.nbytes)
        self.offset, self.n = offset, values.size
        self.array()[:] = values

    def array(self):
        return np.frombuffer(self.storage.bytes, np.float32, self.n, self.offset)

    def untyped_storage(self):
        return self.storage

    def data_ptr(self):
        return self.storage.address + self.offset


class Memory:
    def read(self, region):
        return bytes(region.storage.bytes[region.start - region.base:region.end - region.base])

    def write(self, region, data):
        region.storage.bytes[region.start - region.base:region.end - region.base] = data

    def capturing(self):
        return False

    def on_stream(self, stream, device):
        return nullcontext()
