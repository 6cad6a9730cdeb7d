"""What a CUDA cubin (ELF, e_machine 190) states about its kernels.

Checked against nvcc 13.0, NVRTC 13.5, ptxas 12.9 and Triton 3.4/3.6 output:

- Arch. EI_ABIVERSION >= 8 (all CUDA 13 output, and CUDA 12.9's for sm_100+):
  SM = (e_flags >> 8) & 0xff; "a" is attribute 0x09 = 1 of `.nv.compat`
  (CUDA 13) or e_flags bit 0x8 (CUDA 12.9). Older ABI: SM = e_flags & 0xff,
  "a" = e_flags bit 0x800. The "f" (family) variant is in no ELF field: only
  the toolkit note `.note.nv.tkinfo` names it, in the ptxas command line
  (`-arch sm_100f`), so it is read from there.
- Kernels are the STT_FUNC symbols, global or weak, with st_other bit 0x10
  (STO_CUDA_ENTRY). Section names are not enough: with -rdc a __device__
  function also has `.text.<name>` and `.nv.info.<name>` sections.
- `.nv.info` sections hold records `u8 format, u8 attribute, u16 value`;
  format 4 is followed by `value` bytes of payload. The per-kernel section's
  sh_info is the kernel's .text section index; the shared `.nv.info` keys
  registers, frame and stack sizes by symbol index.
- Static shared memory is the size of the kernel's `.nv.shared.<name>`
  (sh_info = its .text section too). From sm_90 on that size includes a
  1 KiB block the driver reserves and does not count, so it is taken off.
- `local` is the per-thread stack the kernel needs, calls included
  (attribute 0x12, "cumulative stack size" in `ptxas -v`), else its own
  frame (0x11).

Parameter offsets are where the driver copies each argument: they follow the
constant bank's layout, not a packed C struct (a CUDA 13 CUtensorMap is
aligned to 128 in the bank, so its offset differs between sm_80, sm_90 and
sm_100). Pointers are not marked in nvcc output: only sizes are known here.
"""
from __future__ import annotations

import functools
import io
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

from ..errors import SpecError, shorten
from ..files import read_bounded
from ..limits import MAX_BINARY_BYTES, MAX_DEMANGLE_CHARS

EM_CUDA = 190
STO_CUDA_ENTRY = 0x10
SHF_INFO_LINK = 0x40
RESERVED_SHARED_BYTES = 1024     # per block, from sm_90 on
RESERVED_SHARED_FROM_SM = 90

# .nv.info attributes (NVIDIA's EIATTR_* numbering).
ATTR_MAX_THREADS = 0x05          # __launch_bounds__ max threads, (x, y, z)
ATTR_REQUIRED_BLOCK = 0x10       # .reqntid (x, y, z)
ATTR_FRAME_SIZE = 0x11           # shared .nv.info: (symbol, bytes)
ATTR_MIN_STACK_SIZE = 0x12       # shared .nv.info: (symbol, bytes)
ATTR_PARAM_INFO = 0x17           # u32 0, u16 ordinal, u16 offset, u32 (size << 18 | ...)
ATTR_PARAM_BYTES = 0x19
ATTR_MAX_REGISTERS = 0x1b
ATTR_REGISTER_COUNT = 0x2f       # shared .nv.info: (symbol, registers)
ATTR_CTAS_PER_CLUSTER = 0x3d     # (x, y, z)
COMPAT_ARCH_SPECIFIC = 0x09      # .nv.compat: 1 for sm_XXa
FORMAT_SIZED = 4

FATBIN_MAGIC = 0xBA55ED50
FATBIN_KIND_PTX = 1
FATBIN_KIND_CUBIN = 2
FATBIN_COMPRESSED = 0x2000 | 0x8000   # 0x8000 zstd (seen); 0x2000 CUDA 12's older scheme
FATBIN_ARCH_SPECIFIC = 0x100000
FATBIN_FAMILY = 0x200000

Dim3 = tuple[int, int, int]
Source = Union[str, Path]


@dataclass(frozen=True)
class ParamInfo:
    ordinal: int
    offset: int
    size: int

    def to_json(self) -> dict[str, int]:
        return {"ordinal": self.ordinal, "offset": self.offset, "size": self.size}

    @classmethod
    def from_json(cls, data: dict[str, int]) -> "ParamInfo":
        return cls(data["ordinal"], data["offset"], data["size"])


@dataclass(frozen=True)
class KernelInfo:
    """One kernel; a value the binary does not state is None."""

    name: str                       # the symbol, mangled for C++ kernels
    demangled: str | None           # None when not mangled (or no demangler)
    params: list[ParamInfo]         # sorted by ordinal
    param_bytes: int
    registers: int | None
    shared_static: int              # bytes, without the driver's reserved block
    local: int | None               # per-thread stack bytes
    max_threads: Dim3 | None        # __launch_bounds__ / __maxntid__
    required_block: Dim3 | None     # __block_size__ / .reqntid
    cluster: Dim3 | None            # __cluster_dims__ / .reqnctapercluster
    max_registers: int | None       # register cap ptxas honoured (255 when none asked)

    @property
    def cxx_name(self) -> str:
        """The name people read: demangled for a C++ kernel."""
        return self.demangled or self.name

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "demangled": self.demangled,
            "params": [p.to_json() for p in self.params],
            "param_bytes": self.param_bytes,
            "registers": self.registers,
            "shared_static": self.shared_static,
            "local": self.local,
            "max_threads": _dim3_json(self.max_threads),
            "required_block": _dim3_json(self.required_block),
            "cluster": _dim3_json(self.cluster),
            "max_registers": self.max_registers,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "KernelInfo":
        return cls(
            name=data["name"], demangled=data["demangled"],
            params=[ParamInfo.from_json(p) for p in data["params"]],
            param_bytes=data["param_bytes"], registers=data["registers"],
            shared_static=data["shared_static"], local=data["local"],
            max_threads=_dim3_from_json(data["max_threads"]),
            required_block=_dim3_from_json(data["required_block"]),
            cluster=_dim3_from_json(data["cluster"]), max_registers=data["max_registers"])


@dataclass(frozen=True)
class CubinInfo:
    path: str | None
    arch: str                       # "sm_90", "sm_90a", "sm_100f", ...
    sm: int
    variant: str                    # "", "a" (arch-specific) or "f" (family)
    abi_version: int                # EI_ABIVERSION
    elf_flags: int
    toolkit: str | None             # ptxas version from the toolkit note, "13.0.88"
    kernels: list[KernelInfo]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "arch": self.arch,
            "sm": self.sm,
            "variant": self.variant,
            "abi_version": self.abi_version,
            "elf_flags": self.elf_flags,
            "toolkit": self.toolkit,
            "kernels": [k.to_json() for k in self.kernels],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "CubinInfo":
        return cls(
            path=data["path"], arch=data["arch"], sm=data["sm"], variant=data["variant"],
            abi_version=data["abi_version"], elf_flags=data["elf_flags"],
            toolkit=data["toolkit"], kernels=[KernelInfo.from_json(k) for k in data["kernels"]])


@dataclass(frozen=True)
class FatbinEntry:
    kind: str            # "cubin" or "ptx"
    sm: int
    variant: str         # "", "a" or "f"
    compressed: bool
    payload: bytes       # as stored (compressed bytes when compressed)


# --- loading ---------------------------------------------------------------


def load_cubin(path: Source) -> CubinInfo:
    """Read the cubin at `path` (SpecError when missing or not a CUDA ELF file)."""
    return read_cubin(_read_file(path), str(path))


def load_cubins(path: Source) -> list[CubinInfo]:
    """Every cubin in a cubin or fatbin file, for `inspect`."""
    data = _read_file(path)
    if is_fatbin(data):
        return [read_cubin(cubin, f"{path} [{i}]")
                for i, cubin in enumerate(extract_cubins(data, str(path)))]
    return [read_cubin(data, str(path))]


def load_module_globals(path: Source) -> list[dict[str, int]]:
    """module_globals of every cubin in a cubin or fatbin file, as load_cubins orders them."""
    data = _read_file(path)
    if is_fatbin(data):
        return [module_globals(cubin, f"{path} [{i}]")
                for i, cubin in enumerate(extract_cubins(data, str(path)))]
    return [module_globals(data, str(path))]


def read_cubin(data: bytes, path: str | None = None) -> CubinInfo:
    return _with_elf(data, path, lambda elf: _read_elf(elf, data, path))


def _with_elf(data: bytes, path: str | None, read):
    """`read(elf)` of a CUDA ELF file, a SpecError when it is not a readable one."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    where = path or "the cubin"
    _check_cuda_elf(data, where)
    _check_layout(data, where)
    try:
        return read(ELFFile(io.BytesIO(data)))
    # pyelftools is not written for hostile input: what the layout check above
    # cannot rule out ends here as a damaged file, never as a traceback.
    except (ELFError, struct.error, ValueError, OverflowError, IndexError, KeyError,
            TypeError, AttributeError, AssertionError) as exc:
        why = shorten(str(exc) or type(exc).__name__)
        raise SpecError(f"{where} is not a readable cubin: {why}") from None


def module_globals(data: bytes, path: str | None = None) -> dict[str, int]:
    """{name: bytes} of the module's variables: the STT_OBJECT symbols defined in
    a `.nv.constant*` (`__constant__`) or `.nv.global*` (`__device__`) section.
    Read only for a spec with `globals:`, so other runs do not pay for it."""
    return _with_elf(data, path, _globals_of)


def _globals_of(elf: Any) -> dict[str, int]:
    from elftools.elf.sections import SymbolTableSection
    symtab = elf.get_section_by_name(".symtab")
    if not isinstance(symtab, SymbolTableSection):
        return {}
    found: dict[str, int] = {}
    for symbol in symtab.iter_symbols():
        where_defined = symbol["st_shndx"]
        if symbol["st_info"]["type"] != "STT_OBJECT" or not isinstance(where_defined, int):
            continue
        section = elf.get_section(where_defined).name
        if section.startswith((".nv.constant", ".nv.global")) and symbol.name:
            found[symbol.name] = int(symbol["st_size"])
    return found


def _read_file(path: Source) -> bytes:
    return read_bounded(path, MAX_BINARY_BYTES, "cubin or fatbin")


def _check_cuda_elf(data: bytes, where: str) -> None:
    if data[:4] != b"\x7fELF":
        if is_fatbin(data):
            raise SpecError(f"{where} is a fatbin, not a cubin")
        raise SpecError(f"{where} is not an ELF file (not a cubin)")
    if len(data) < 20 or data[4] not in (1, 2) or data[5] != 1:
        raise SpecError(f"{where} is not a readable cubin: bad ELF header")
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine != EM_CUDA:
        raise SpecError(f"{where} is an ELF file for machine {machine}, "
                        f"not a CUDA cubin (machine {EM_CUDA})")


SHT_SYMTAB, SHT_NOBITS = 2, 8


def _check_layout(data: bytes, where: str) -> None:
    """Every offset and size in the ELF and section headers lies inside the file.

    A header claiming an offset near 2**64 would otherwise reach pyelftools,
    which seeks and reads wherever a header says."""
    wide = data[4] == 2
    header = 64 if wide else 52
    if len(data) < header:
        raise SpecError(f"{where} is not a readable cubin: truncated ELF header")
    if wide:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    else:
        shoff, = struct.unpack_from("<I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    entry = 64 if wide else 40
    bad = _check_segments(data, wide)
    if bad:
        pass
    elif shnum == 0:
        bad = "no section headers"
    elif shentsize != entry:
        bad = f"section header size {shentsize}, not {entry}"
    elif shoff + shnum * entry > len(data):
        bad = "the section headers lie past the end of the file"
    elif shstrndx >= shnum:
        bad = "no section name table"
    for i in range(shnum if bad is None else 0):
        at = shoff + i * entry
        if wide:
            sh_type, = struct.unpack_from("<I", data, at + 4)
            offset, size = struct.unpack_from("<QQ", data, at + 0x18)
            entsize, = struct.unpack_from("<Q", data, at + 0x38)
        else:
            sh_type, = struct.unpack_from("<I", data, at + 4)
            offset, size = struct.unpack_from("<II", data, at + 0x10)
            entsize, = struct.unpack_from("<I", data, at + 0x24)
        if sh_type != SHT_NOBITS and offset + size > len(data):
            bad = f"section {i} lies past the end of the file"
        elif sh_type == SHT_SYMTAB and entsize != (24 if wide else 16):
            bad = f"symbol table entry size {entsize}"
        if bad:
            break
    if bad:
        raise SpecError(f"{where} is not a readable cubin: {bad}")


def _check_segments(data: bytes, wide: bool) -> str | None:
    """What is wrong with the program headers (the driver loads by them), or None."""
    if wide:
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    else:
        phoff, = struct.unpack_from("<I", data, 0x1C)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x2A)
    entry = 56 if wide else 32
    if phnum == 0:
        return None
    if phentsize != entry:
        return f"program header size {phentsize}, not {entry}"
    if phoff + phnum * entry > len(data):
        return "the program headers lie past the end of the file"
    for i in range(phnum):
        at = phoff + i * entry
        if wide:                        # p_offset, and p_filesz past p_vaddr and p_paddr
            offset, size = struct.unpack_from("<Q16xQ", data, at + 8)
        else:
            offset, size = struct.unpack_from("<I8xI", data, at + 4)
        if offset + size > len(data):
            return f"segment {i} lies past the end of the file"
    return None


def _read_elf(elf: Any, data: bytes, path: str | None) -> CubinInfo:
    flags = elf.header["e_flags"]
    abi_version = data[8]
    sm, variant = _arch(flags, abi_version, _compat(elf), _tool_arch(elf))
    shared_info = _shared_info(elf)
    reserved = RESERVED_SHARED_BYTES if sm >= RESERVED_SHARED_FROM_SM else 0
    linked = _linked_sections(elf)
    kernels = [_kernel(linked, name, index, text, shared_info, reserved)
               for name, index, text in _kernel_symbols(elf)]
    return CubinInfo(path=path, arch=f"sm_{sm}{variant}", sm=sm, variant=variant,
                     abi_version=abi_version, elf_flags=flags,
                     toolkit=_toolkit(elf), kernels=kernels)


# --- arch ------------------------------------------------------------------


def _arch(flags: int, abi_version: int, compat: dict[int, Any],
          tool_arch: str | None) -> tuple[int, str]:
    if abi_version >= 8:
        sm = (flags >> 8) & 0xFF
        arch_specific = bool(flags & 0x8) or compat.get(COMPAT_ARCH_SPECIFIC) == 1
    else:
        sm = flags & 0xFF
        arch_specific = bool(flags & 0x800)
    if arch_specific:
        return sm, "a"
    if tool_arch == f"sm_{sm}f":
        return sm, "f"
    return sm, ""


def _compat(elf: Any) -> dict[int, Any]:
    section = elf.get_section_by_name(".nv.compat")
    return dict(_records(section.data())) if section is not None else {}


def _tool_note(elf: Any) -> bytes:
    section = elf.get_section_by_name(".note.nv.tkinfo")
    return section.data() if section is not None else b""


def _tool_arch(elf: Any) -> str | None:
    match = re.search(rb"-arch[ =]?(sm_\d+[af]?)\b", _tool_note(elf))
    return match.group(1).decode() if match else None


def _toolkit(elf: Any) -> str | None:
    match = re.search(rb"Cuda compilation tools, release [\d.]+, V(\d+\.\d+\.\d+)",
                      _tool_note(elf))
    return match.group(1).decode() if match else None


# --- kernels ---------------------------------------------------------------


@dataclass
class _SharedInfo:
    """What the shared .nv.info says, keyed by symbol index."""

    registers: dict[int, int]
    frame: dict[int, int]
    stack: dict[int, int]


def _shared_info(elf: Any) -> _SharedInfo:
    info = _SharedInfo({}, {}, {})
    targets = {ATTR_REGISTER_COUNT: info.registers, ATTR_FRAME_SIZE: info.frame,
               ATTR_MIN_STACK_SIZE: info.stack}
    section = elf.get_section_by_name(".nv.info")
    if section is None:
        return info
    for attr, value in _records(section.data()):
        if attr in targets and isinstance(value, bytes) and len(value) == 8:
            symbol, amount = struct.unpack("<II", value)
            targets[attr][symbol] = amount
    return info


def _kernel_symbols(elf: Any) -> Iterator[tuple[str, int, int]]:
    """(name, symbol index, .text section index) of each entry point."""
    from elftools.elf.sections import SymbolTableSection
    symtab = elf.get_section_by_name(".symtab")
    if not isinstance(symtab, SymbolTableSection):
        return
    raw = symtab.data()
    entry_size = symtab["sh_entsize"]
    other_at = 5 if elf.elfclass == 64 else 13     # st_other, which pyelftools trims
    for index, symbol in enumerate(symtab.iter_symbols()):
        st_other = raw[index * entry_size + other_at]
        if (symbol["st_info"]["type"] == "STT_FUNC"
                and symbol["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
                and st_other & STO_CUDA_ENTRY
                and isinstance(symbol["st_shndx"], int)):
            yield symbol.name, index, symbol["st_shndx"]


def _kernel(linked: dict, name: str, symbol: int, text: int, shared_info: _SharedInfo,
            reserved_shared: int) -> KernelInfo:
    attrs: dict[int, Any] = {}
    params: list[ParamInfo] = []
    info = linked.get((".nv.info.", text))
    for attr, value in _records(info.data()) if info is not None else ():
        if attr == ATTR_PARAM_INFO:
            params.append(_param(value))
        else:
            attrs[attr] = value
    params.sort(key=lambda p: p.ordinal)
    param_bytes = attrs.get(ATTR_PARAM_BYTES)
    if not isinstance(param_bytes, int):
        param_bytes = max((p.offset + p.size for p in params), default=0)
    shared = linked.get((".nv.shared.", text))
    shared_bytes = shared["sh_size"] if shared is not None else 0
    if shared_bytes >= reserved_shared:
        shared_bytes -= reserved_shared
    return KernelInfo(
        name=name,
        demangled=demangle(name),
        params=params,
        param_bytes=param_bytes,
        registers=shared_info.registers.get(symbol),
        shared_static=shared_bytes,
        local=shared_info.stack.get(symbol, shared_info.frame.get(symbol)),
        max_threads=_dim3(attrs.get(ATTR_MAX_THREADS)),
        required_block=_dim3(attrs.get(ATTR_REQUIRED_BLOCK)),
        cluster=_dim3(attrs.get(ATTR_CTAS_PER_CLUSTER)),
        max_registers=_int_value(attrs.get(ATTR_MAX_REGISTERS)),
    )


def _linked_sections(elf: Any) -> dict[tuple[str, int], Any]:
    """The `.nv.info.<kernel>` and `.nv.shared.<kernel>` sections, keyed by the
    kernel's .text section index: their sh_info where SHF_INFO_LINK says it is
    one, else the index of `.text.<kernel>` (a section whose flags leave the
    link out would otherwise leave its kernel without parameters, and the check
    would refuse every spec of it). Found in one pass: a file with many kernels
    and sections must not cost kernels x sections."""
    linked: dict[tuple[str, int], Any] = {}
    unlinked: list[tuple[str, Any]] = []
    texts: dict[str, int] = {}
    for index, section in enumerate(elf.iter_sections()):
        if section.name.startswith(".text."):
            texts[section.name[len(".text."):]] = index
        for prefix in (".nv.info.", ".nv.shared."):
            if section.name.startswith(prefix):
                if section["sh_flags"] & SHF_INFO_LINK and section["sh_info"]:
                    linked.setdefault((prefix, section["sh_info"]), section)
                else:
                    unlinked.append((prefix, section))
    for prefix, section in unlinked:
        text = texts.get(section.name[len(prefix):])
        if text is not None:
            linked.setdefault((prefix, text), section)
    return linked


def _param(payload: Any) -> ParamInfo:
    if not isinstance(payload, bytes) or len(payload) != 12:
        raise ValueError("malformed parameter record (attribute 0x17)")
    _, ordinal, offset, flags = struct.unpack("<IHHI", payload)
    return ParamInfo(ordinal=ordinal, offset=offset, size=flags >> 18)


def _records(data: bytes) -> Iterator[tuple[int, Union[int, bytes]]]:
    """(attribute, value) of each .nv.info record; sized ones give their payload."""
    pos = 0
    while pos + 4 <= len(data):
        fmt, attr, value = struct.unpack_from("<BBH", data, pos)
        pos += 4
        if fmt == FORMAT_SIZED:
            if pos + value > len(data):
                raise ValueError(f"truncated .nv.info record (attribute {attr:#x})")
            yield attr, data[pos:pos + value]
            pos += value
        else:
            yield attr, value


def _dim3(value: Any) -> Dim3 | None:
    if isinstance(value, bytes) and len(value) == 12:
        return struct.unpack("<III", value)
    return None


def _int_value(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def _dim3_json(value: Dim3 | None) -> list[int] | None:
    return list(value) if value is not None else None


def _dim3_from_json(value: list[int] | None) -> Dim3 | None:
    return tuple(value) if value is not None else None


# --- demangling ------------------------------------------------------------


def demangle(name: str) -> str | None:
    """The C++ name of a mangled symbol; None if not mangled (or no demangler).
    cpp-demangle (a wheel for every platform, Windows included) does it; where
    it is not installed, libstdc++'s __cxa_demangle does on Linux."""
    if not name.startswith("_Z") or len(name) > MAX_DEMANGLE_CHARS:
        return None
    try:
        import cpp_demangle
    except ImportError:
        return _demangle_with_libstdcxx(name)
    try:
        return cpp_demangle.demangle(name)
    except ValueError:          # not a well-formed symbol
        return None


def _demangle_with_libstdcxx(name: str) -> str | None:
    import ctypes

    cxa = _cxa_demangle()
    if cxa is None:
        return None
    demangler, free = cxa
    status = ctypes.c_int()
    result = demangler(name.encode(), None, None, ctypes.byref(status))
    if not result:
        return None
    try:
        return ctypes.string_at(result).decode() if status.value == 0 else None
    finally:
        free(result)


@functools.lru_cache(maxsize=None)
def _cxa_demangle() -> tuple[Any, Any] | None:
    import ctypes

    try:
        library = ctypes.CDLL("libstdc++.so.6")
        demangler = library.__cxa_demangle
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError):
        return None
    demangler.restype = ctypes.c_void_p
    demangler.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.POINTER(ctypes.c_int)]
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return demangler, free


# --- fatbins ---------------------------------------------------------------


def is_fatbin(data: bytes) -> bool:
    return len(data) >= 16 and struct.unpack_from("<I", data)[0] == FATBIN_MAGIC


def read_fatbin(data: bytes, path: str | None = None) -> list[FatbinEntry]:
    """The entries of one or more fatbin containers laid end to end.

    Container: u32 magic, u16 version, u16 header size, u64 size of the entries.
    Entry header: u16 kind (1 PTX, 2 cubin), u16, u32 header size, u64 payload
    size, ..., u32 SM at 28, u64 flags at 40 (0x8000 zstd, 0x2000 older
    compression, 0x100000 "a", 0x200000 "f").
    """
    where = path or "the fatbin"
    entries: list[FatbinEntry] = []
    pos = 0
    while pos + 16 <= len(data) and struct.unpack_from("<I", data, pos)[0] == FATBIN_MAGIC:
        _, _, header_size, body_size = struct.unpack_from("<IHHQ", data, pos)
        entry_pos, end = pos + header_size, pos + header_size + body_size
        if header_size < 16:            # a header of 0 bytes would never move on
            raise SpecError(f"{where} is not a readable fatbin: header size {header_size}")
        if end > len(data):
            raise SpecError(f"{where} is a truncated fatbin")
        while entry_pos < end:
            if entry_pos + 48 > end:
                raise SpecError(f"{where} is a truncated fatbin")
            kind, _, entry_header, size = struct.unpack_from("<HHIQ", data, entry_pos)
            sm = struct.unpack_from("<I", data, entry_pos + 28)[0]
            flags = struct.unpack_from("<Q", data, entry_pos + 40)[0]
            start = entry_pos + entry_header
            if entry_header < 48 or start + size > end:
                raise SpecError(f"{where} is a truncated fatbin")
            if kind in (FATBIN_KIND_PTX, FATBIN_KIND_CUBIN):
                variant = ("a" if flags & FATBIN_ARCH_SPECIFIC
                           else "f" if flags & FATBIN_FAMILY else "")
                entries.append(FatbinEntry(
                    kind="cubin" if kind == FATBIN_KIND_CUBIN else "ptx", sm=sm,
                    variant=variant, compressed=bool(flags & FATBIN_COMPRESSED),
                    payload=data[start:start + size]))
            entry_pos = start + size
        pos = end
    if not entries:
        raise SpecError(f"{where} is not a fatbin (or holds no code)")
    return entries


def extract_cubins(data: bytes, path: str | None = None) -> list[bytes]:
    """The cubins of a fatbin (PTX entries are skipped)."""
    where = path or "the fatbin"
    cubins = []
    for entry in read_fatbin(data, path):
        if entry.kind != "cubin":
            continue
        if entry.compressed:
            raise SpecError(f"{where}: its sm_{entry.sm}{entry.variant} cubin is "
                            f"compressed, which cubinrun does not unpack; rebuild "
                            f"with `nvcc --no-compress` or pass a .cubin")
        cubins.append(entry.payload)
    if not cubins:
        raise SpecError(f"{where} holds no cubin (PTX only)")
    return cubins
