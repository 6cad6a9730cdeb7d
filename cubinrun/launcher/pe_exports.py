"""The names a Windows DLL exports, read from its PE export table.

MSVC links a DLL only through an import library, which the embeddable Python
does not ship: its .def is made from these names (lib.exe /def: turns it into
the .lib). Reading the table here saves needing dumpbin or a PE library.
"""
from __future__ import annotations

import struct
from pathlib import Path


def exported_names(dll: Path) -> list[str]:
    """The exported names, in the table's (sorted) order; ValueError if not a PE DLL."""
    data = Path(dll).read_bytes()
    if data[:2] != b"MZ":
        raise ValueError(f"{dll} is not a PE file")
    (pe,) = struct.unpack_from("<I", data, 0x3C)
    if data[pe:pe + 4] != b"PE\0\0":
        raise ValueError(f"{dll} is not a PE file")
    (sections,) = struct.unpack_from("<H", data, pe + 6)
    (optional_size,) = struct.unpack_from("<H", data, pe + 20)
    optional = pe + 24
    (magic,) = struct.unpack_from("<H", data, optional)
    directories = optional + (112 if magic == 0x20B else 96)   # PE32+ or PE32
    export_rva, export_size = struct.unpack_from("<II", data, directories)
    if export_size == 0:
        return []
    table = optional + optional_size
    spans = [struct.unpack_from("<IIII", data, table + 40 * i + 8) for i in range(sections)]

    def offset(rva: int) -> int:
        for virtual_size, address, raw_size, raw_offset in spans:
            if address <= rva < address + max(virtual_size, raw_size):
                return rva - address + raw_offset
        raise ValueError(f"{dll}: address {rva:#x} is in no section")

    directory = offset(export_rva)
    (count,) = struct.unpack_from("<I", data, directory + 24)        # NumberOfNames
    (names_rva,) = struct.unpack_from("<I", data, directory + 32)    # AddressOfNames
    names = offset(names_rva)
    out = []
    for i in range(count):
        (name_rva,) = struct.unpack_from("<I", data, names + 4 * i)
        start = offset(name_rva)
        out.append(data[start:data.index(b"\0", start)].decode("ascii"))
    return out
