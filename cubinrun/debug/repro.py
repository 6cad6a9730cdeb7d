"""`cubinrun repro SPEC -o DIR`: a reproducer that needs neither cubinrun nor a toolkit.

The folder holds the cubin, every buffer's input as raw bytes (`inputs/`),
every checked output's expected values (`expected/`), one C file that uses
only the driver API, and `run.sh`, which builds it with `cc` and runs it.

The C passes the kernel exactly the parameter bytes cubinrun's launcher
passes: scalars and structs passed by value are packed here as the launcher
gets them (plan/packing.py: fp16 and bf16 rounded to nearest even from the
double, booleans in one byte) and written into the C as bytes; pointers are
the program's own allocations, in the same places (a buffer's `offset:`
past its allocation's start included), patched into structs that hold
them; a CUtensorMap is
encoded by the program with cuTensorMapEncodeTiled from the same arguments
cubinrun uses (tma.tiled_args). Function and launch attributes follow
gpu/kernel.py and the launcher's Config: the shared-memory opt-in above 48 KiB,
non-portable clusters above 8, PDL, cooperative, clusters (num_ctas: a
(K, 1, 1) cluster with the SPREAD policy). The expected outputs come from the
spec's `check` (check.expected_for), so generating a reproducer needs no GPU
for a cubin or Triton kernel (a `reference: FILE.py:FUNCTION` runs here, as
it would for a launch). Module globals (`globals:`) are written as inputs
too, at the address cuModuleGetGlobal gives, and may be checked. Region
checks are not reproduced yet: such a spec is refused with one line (exit 2)
rather than given a reproducer that would compare other elements.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..hostdata.values import input_values, to_float64
from ..plan.packing import pack_struct, scalar_bytes
from ..signature import leaf_size

_TEMPLATE = Path(__file__).with_name("repro_template.c")
_SLOT = re.compile(r"\{\{([A-Z_]+)\}\}")
_INT_FORMATS = {"i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
                "u1": "B", "u8": "B", "u16": "H", "u32": "I", "u64": "Q"}
_C_TYPES = {"i1": "T_I8", "i8": "T_I8", "i16": "T_I16", "i32": "T_I32", "i64": "T_I64",
            "u1": "T_U8", "u8": "T_U8", "u16": "T_U16", "u32": "T_U32", "u64": "T_U64",
            "fp16": "T_F16", "bf16": "T_BF16", "fp32": "T_F32", "fp64": "T_F64",
            "fp8e4nv": "T_F8", "fp8e5": "T_F8", "fp8e4b15": "T_F8"}
RUN_SH = """#!/bin/sh
# Build and run the reproducer: needs a C compiler and the NVIDIA driver only.
# CC picks the compiler; REPRO_DEVICE the device (0); REPRO_REPEATS the timed launches (20).
set -e
cd "$(dirname "$0")"
"${CC:-cc}" -O2 -std=c11 -o repro repro.c -ldl -lm
exec ./repro "$@"
"""


@dataclass(frozen=True)
class Written:
    folder: Path
    files: list[str]
    input_bytes: int
    checks: list[str]


# ---------------------------------------------------------------- the folder

def write_repro(prepared, folder: Path, inputs: list | None = None,
                force: bool = False) -> Written:
    """Write the reproducer of `prepared` (prepare.Prepared; no launcher needed).
    `inputs`: the buffers' hostdata.InputValues (made here if not given). Inputs
    and expected outputs are written block by block, made on the worker
    threads: no buffer is ever whole in host memory. A reproducer already in
    `folder` is overwritten only with `force`; no file is written through a
    link, and its subfolders must be real folders (files.py's rules)."""
    from ..gpu.buffers import make_inputs
    from ..hostdata.check import expected_for
    plan = prepared.plan
    spec = plan.spec
    from ..specfile.locate import located
    with located(spec.path):
        refuse_unsupported(spec)
    outputs = {**spec.buffers, **spec.globals}
    names = list(outputs)
    input_paths = [f"inputs/{index:02d}_{_file_name(name)}.bin" for index, name in enumerate(names)]
    expected_paths = [f"expected/{_file_name(check.output)}.bin" for check in spec.checks]
    files = ["kernel.cubin", "repro.c", "run.sh", *input_paths, *expected_paths]
    _check_folder(folder, files, force)
    if inputs is None:
        inputs = make_inputs(plan)
    inputs = list(inputs) + [input_values(g, len(spec.buffers) + i)       # as a launch makes them
                             for i, g in enumerate(spec.globals.values())]
    symbols = {}
    if spec.globals:
        from ..binary.cubin import module_globals
        from ..gpu.module_globals import check_globals
        symbols = check_globals(spec, module_globals(prepared.cubin), str(spec.kernel.path))
    _write(folder / "kernel.cubin", [prepared.cubin])

    buffer_rows, input_bytes = [], 0
    for name, values, path in zip(names, inputs, input_paths, strict=True):
        nbytes = _write(folder / path, _input_blocks(values))
        input_bytes += nbytes
        offset = outputs[name].offset_bytes
        symbol = _c_string(symbols[name]) if name in symbols else "NULL"
        buffer_rows.append(f"    {{{_c_string(name)}, {_c_string(path)}, {nbytes}u, "
                           f"{offset}u, {symbol}}},")

    check_rows, tables = [], {}
    by_name = dict(zip(names, inputs))
    env = spec.expression_env()
    for check, path in zip(spec.checks, expected_paths, strict=True):
        buffer = outputs[check.output]
        dtype = buffer.dtype
        with located(spec.path):            # a reference's errors name the spec's line
            expected = expected_for(check, buffer.shape, dtype, by_name, env)
        _write(folder / path, expected.blocks())
        table = "NULL"
        if dtype.size == 1 and dtype.kind == "float":
            table = f"TABLE_{dtype.name}"
            tables[dtype.name] = _byte_table(dtype)
        check_rows.append(
            f"    {{{_c_string(_file_name(check.output))}, {names.index(check.output)}, "
            f"{expected.mode.upper()}, {_C_TYPES[dtype.name]}, {table}, "
            f"{int(dtype.kind == 'float')}, {buffer.numel}u, {dtype.size}u, "
            f"{expected.rtol!r}, {expected.atol!r}, {int(expected.nan_ok)}, "
            f"{_c_string(path)}}},")

    source = _source(prepared, buffer_rows, check_rows, tables)
    _write(folder / "repro.c", [source.encode()])
    _write(folder / "run.sh", [RUN_SH.encode()], mode=0o777)    # the umask makes it 755
    return Written(folder, files, input_bytes, [c.output for c in spec.checks])


def refuse_unsupported(spec) -> None:
    """SpecError for what the reproducer's C cannot do yet (module docstring)."""
    from ..errors import SpecError
    for check in spec.checks:
        if check.region is not None:
            raise SpecError(f"repro compares whole outputs; the region check {check.name!r} "
                            "has no reproducer yet", field="check", line=check.line)


def _check_folder(folder: Path, files: list[str], force: bool) -> None:
    """Before any work: the folder and its subfolders are real folders (made
    here), and no file of a reproducer there is overwritten without `force`."""
    from ..errors import UsageError
    from ..files import output_problem
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for sub in ("inputs", "expected", "outputs"):
            path = folder / sub
            path.mkdir(exist_ok=True)
            if os.path.islink(path) or not path.is_dir():
                raise UsageError(f"-o {folder}: {sub} is not a folder of its own "
                                 "(a link or a file); remove it")
    except FileExistsError:
        raise UsageError(f"-o {folder}: a file, not a folder") from None
    except OSError as exc:
        raise UsageError(f"-o {folder}: cannot write there ({exc.strerror or exc})") from None
    for name in files:
        if problem := output_problem(folder / name):
            raise UsageError(f"-o {folder}: {name} {problem}")
        if not force and os.path.lexists(folder / name):
            raise UsageError(f"-o {folder}: it holds a reproducer ({name}); pass --force to "
                             "overwrite it")


def _input_blocks(values):
    from ..hostdata.threads import ordered
    return ordered(lambda k=k: values.block(k) for k in range(values.blocks))


def _write(path: Path, blocks, mode: int = 0o666) -> int:
    """Write the blocks' bytes one after the other, as a new file that then
    takes the name (never through a link); the bytes written."""
    from ..errors import UsageError
    from ..files import OutputFile
    written = 0
    try:
        with OutputFile(path, mode) as out:
            for block in blocks:
                data = (block if isinstance(block, bytes)     # any array's dtype, as bytes
                        else np.ascontiguousarray(block).reshape(-1).view(np.uint8))
                out.file.write(data)
                written += len(data)
    except OSError as exc:                  # a full disk: the flag and the file, one line
        raise UsageError(f"cannot write -o {path}: {exc.strerror or exc}") from None
    return written


def _source(prepared, buffer_rows: list[str], check_rows: list[str], tables: dict) -> str:
    plan = prepared.plan
    spec, launch = plan.spec, plan.spec.launch
    names = [*spec.buffers, *spec.globals]
    gx, gy, gz = spec.launched_grid
    bx, by, bz = spec.block
    cluster = plan.cluster
    scratch = (plan.global_scratch, plan.profile_scratch)
    defines = [
        f"#define KERNEL_NAME {_c_string(prepared.kernel_name)}",
        f"#define CUBIN_BYTES {len(prepared.cubin)}u",
        f"#define SHARED_BYTES {launch.shared}",
        f"#define GRID_X {gx}u", f"#define GRID_Y {gy}u", f"#define GRID_Z {gz}u",
        f"#define BLOCK_X {bx}u", f"#define BLOCK_Y {by}u", f"#define BLOCK_Z {bz}u",
        f"#define CLUSTER_SIZE {math.prod(cluster) if cluster else 1}",
        f"#define NUM_BUFFERS {len(names)}",
        f"#define NUM_CHECKS {len(check_rows)}",
        "static const size_t SCRATCH_BYTES[2] = {"
        + ", ".join(f"{s.nbytes if i < plan.num_scratch else 0}u" for i, s in enumerate(scratch))
        + "};",
        "static const size_t SCRATCH_ALIGN[2] = {"
        + ", ".join(f"{max(s.align, 1)}u" for s in scratch) + "};",
    ]
    parts = ["\n".join(defines)]
    for name, values in tables.items():
        parts.append(f"static const double TABLE_{name}[256] = {{\n    "
                     + ", ".join(_c_double(v) for v in values) + "};")
    parts.append("static const Buffer BUFFERS[NUM_BUFFERS + 1] = {\n"
                 + "\n".join(buffer_rows) + "\n    {NULL, NULL, 0, 0, NULL}};")
    parts.append("static const Check CHECKS[NUM_CHECKS + 1] = {\n" + "\n".join(check_rows)
                 + "\n    {NULL, 0, 0, 0, NULL, 0, 0, 0, 0.0, 0.0, 0, NULL}};")
    title = (f"{prepared.kernel_name} from {spec.kernel.path.name}: grid {gx} x {gy} x {gz}, "
             f"block {bx} x {by} x {bz}, {launch.shared} B dynamic shared memory")
    slots = {"TITLE": title, "TABLES": "\n\n".join(parts), "PARAMS": _params(plan, names),
             "ATTRIBUTES": _attributes(launch, cluster)}
    return _SLOT.sub(lambda m: slots[m.group(1)], _template())


def _params(plan, names: list[str]) -> str:
    """One C declaration per kernel parameter, then the array of their addresses."""
    from ..gpu.tma import tiled_args
    spec = plan.spec
    lines, pointers = [], []
    for k, slot in enumerate(plan.slots):
        leaf = slot.leaf
        note = f"/* {k}: {leaf.path} ({leaf.type}): {slot.describe()} */"
        if slot.kind in ("buffer", "desc_base"):
            target = slot.name if slot.kind == "buffer" else slot.desc.buffer
            at = f" + {slot.at}" if slot.kind == "buffer" and slot.at else ""
            lines.append(f"  CUdeviceptr p{k} = dev[{names.index(target)}]{at}; {note}")
            pointers.append(f"&p{k}")
        elif slot.kind == "null":
            lines.append(f"  CUdeviceptr p{k} = 0; {note}")
            pointers.append(f"&p{k}")
        elif slot.kind == "scalar":
            data = scalar_bytes(leaf.type, slot.value)
            assert len(data) == leaf_size(leaf.type)
            lines.append(f"  static _Alignas(8) unsigned char p{k}[{len(data)}] = "
                         f"{{{', '.join(f'0x{b:02x}' for b in data)}}}; {note}")
            pointers.append(f"p{k}")
        elif slot.kind == "struct":
            from ..signature.aggregates import aggregate_of, size_align
            size, align = size_align(aggregate_of(leaf.type))
            data = pack_struct(size, slot.members, lambda name: 0)     # pointers patched below
            lines.append(f"  static _Alignas({align}) unsigned char p{k}[{size}] = "
                         f"{{{', '.join(f'0x{b:02x}' for b in data)}}}; {note}")
            lines += [f"  {{ CUdeviceptr a = dev[{names.index(m.value)}] + {m.at}; "
                      f"memcpy(p{k} + {m.offset}, &a, 8); }} /* {m.path} */"
                      for m in slot.members if m.kind == "buffer"]
            pointers.append(f"p{k}")
        elif slot.kind == "tma":
            buffer = spec.buffers[slot.desc.buffer]
            a = tiled_args(slot.desc, buffer, slot.meta)
            rank = len(a.dims)
            strides = a.strides or [0]
            lines += [
                f"  static CUtensorMap p{k}; {note}",
                "  {",
                f"    const unsigned long long dims[] = {{{', '.join(f'{d}ull' for d in a.dims)}}};",
                f"    const unsigned long long strides[] = "
                f"{{{', '.join(f'{s}ull' for s in strides)}}};",
                f"    const unsigned int box[] = {{{', '.join(f'{b}u' for b in a.box)}}};",
                f"    const unsigned int ones[] = {{{', '.join(['1u'] * rank)}}};",
                "    if (!cuTensorMapEncodeTiled) {",
                '      fprintf(stderr, "error: this driver has no cuTensorMapEncodeTiled\\n");',
                "      return 4;",
                "    }",
                f"    CHECK(cuTensorMapEncodeTiled(&p{k}, {a.data_type}, {rank}, "
                f"(void *)(uintptr_t)dev[{names.index(slot.desc.buffer)}], dims, strides, box, "
                f"ones, 0, {a.swizzle}, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, {int(a.oob_nan)}));",
                "  }",
            ]
            pointers.append(f"&p{k}")
        else:
            raise AssertionError(f"unknown slot kind {slot.kind}")
    for s in range(plan.num_scratch):
        k = len(plan.slots) + s
        label = ("global", "profile")[s]
        lines.append(f"  CUdeviceptr p{k} = scratch[{s}]; /* {k}: {label} scratch */")
        pointers.append(f"&p{k}")
    lines.append(f"  void *args[] = {{{', '.join(pointers) or 'NULL'}}};")
    return "\n".join(lines)


def _attributes(launch, cluster) -> str:
    """The launch attributes, in the order the launcher's Config sets them."""
    lines = []

    def add(attribute: str, *assignments: str) -> None:
        lines.append(f"  attrs[num_attrs].id = {attribute};")
        lines.extend(f"  attrs[num_attrs].value.{a};" for a in assignments)
        lines.append("  num_attrs++;")
    if launch.pdl:
        add("CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION",
            "programmaticStreamSerializationAllowed = 1")
    if launch.cooperative:
        add("CU_LAUNCH_ATTRIBUTE_COOPERATIVE", "cooperative = 1")
    if launch.num_ctas > 1:
        add("CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", f"clusterDim.x = {launch.num_ctas}",
            "clusterDim.y = 1", "clusterDim.z = 1")
        add("CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE",
            "clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD")
    elif launch.cluster is not None:
        x, y, z = launch.cluster
        add("CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", f"clusterDim.x = {x}", f"clusterDim.y = {y}",
            f"clusterDim.z = {z}")
    return "\n".join(lines) or "  /* no launch attributes */"


@lru_cache(maxsize=1)
def _template() -> str:
    return _TEMPLATE.read_text()


def _byte_table(dtype) -> list[float]:
    """Every value of an 8-bit float type, by bit pattern."""
    bits = np.arange(256, dtype=np.uint8)
    host = dtype.numpy_dtype()
    return [float(v) for v in to_float64(bits if host == np.uint8 else bits.view(host), dtype)]


def _c_double(value: float) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    return repr(value)


def _c_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    if not escaped.isascii() or not escaped.isprintable():
        raise ValueError(f"{text!r}: not a printable ASCII name")
    return f'"{escaped}"'


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
