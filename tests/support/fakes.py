"""What the fakes are told of the samples: the bytes of a cubin's header and
the vector add's parameter sizes (tests/fakecuda records launches by them)."""
from __future__ import annotations

# The whole launch path on the fake driver (tests/fakecuda) expects the vector
# add's parameters: the fake records this many bytes per parameter.
VECTOR_ADD_PARAMS = [8, 8, 8, 4]


def fake_cubin_bytes() -> bytes:
    """The first bytes of a CUDA ELF: enough for the file-type check."""
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4] = 2                      # 64-bit
    header[5] = 1                      # little endian
    header[18:20] = (190).to_bytes(2, "little")
    return bytes(header)
