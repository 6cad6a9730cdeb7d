"""`cubinrun init`: a starter spec written from what a cubin says.

The spec it writes always passes its own `launch --dry-run`; what it cannot
know is marked for a human:

- A C++ kernel (not `extern "C"`) is named as written in C++, by the
  shortest name that picks it (plain, with template arguments, or the full
  signature), and its demangled parameter types give the spec's types where
  they are scalars or pointers to scalars (`float const*` -> `*kfp32`).

- A cubin states each parameter's size and offset, not its type (nvcc does
  not mark pointers), so every type is a guess, marked `guess`: 8 bytes is
  most often a pointer, 4 an int32, 2 an int16, 1 an int8, 128 at a 64-byte
  aligned offset a CUtensorMap; any other size a struct of ints laid out to
  fit the size and the offset (`struct[i32, i32, i32]`), to be replaced by
  its real members.
- Each value fits its type (an i8 gets 1, not the problem size N).
- The grid is a multiple of a compiled cluster; the block is the required
  one, else 128 threads within the kernel's bounds.
- A cubin of a Triton cache entry (`X.cubin` beside `X.json`) needs no
  guesses: the spec uses `kernel: {triton: X.json}`, whose JSON brings the
  launch metadata and whose TTIR brings the signature. When the entry does
  not read, the types are guessed and a comment says why.
"""
from __future__ import annotations

import os
from pathlib import Path

from .. import signature as sig
from ..signature.aggregates import member_types
from ..binary.cubin import CubinInfo, KernelInfo, ParamInfo
from ..errors import CubinrunError, UsageError

PROBLEM_SIZE = 1024               # the starter's N
ALTERNATIVES = {8: "a pointer *T, or i64 / u64 / fp64", 4: "i32, u32 or fp32",
                2: "i16, u16, fp16 or bf16", 1: "i8, u8 or i1"}
TMA_VALUE = "{buffer: {shape: [64, 64], dtype: fp32}, block: [64, 64]}"


def pick_kernel(info: CubinInfo, name: str | None) -> KernelInfo:
    """The kernel `--kernel` names, or the only one."""
    if not info.kernels:
        raise UsageError(f"{info.path} holds no kernel")
    if name is None and len(info.kernels) != 1:
        names = ", ".join(k.cxx_name for k in info.kernels) or "none"
        raise UsageError(f"{info.path} holds {len(info.kernels)} kernels ({names}); "
                         "say which one with --kernel NAME")
    from ..binary.names import kernel_of
    return kernel_of(info, name)


def starter_spec(info: CubinInfo, kernel: KernelInfo, cubin: Path, spec_dir: Path,
                 kind: str = "cubin", name: str | None = None, arch: str | None = None) -> str:
    """The starter spec's text, with paths relative to `spec_dir`; `kind` "source"
    when `cubin` is the CUDA C++ file the cubin was compiled from, `name` the
    kernel's name there (a template instance is compiled only when named), `arch`
    the target it was compiled for when one was asked (`kernel.arch`, so that the
    spec dry-runs without a GPU as `init` did)."""
    entry, problem = _triton_entry(cubin) if kind == "cubin" else (None, None)
    if entry is not None:
        return _triton_starter(entry, kernel, spec_dir)
    return _guessed_starter(info, kernel, cubin, spec_dir, problem, kind, name, arch)


# --- a C++ kernel: types from its demangled signature ------------------------

def cxx_type(written: str, size: int) -> str | None:
    """The spec's type for a C++ parameter type as names.py spells it (`float const*`
    -> `*kfp32`), when it is a scalar or a pointer to one of `size` bytes."""
    from ..binary.declared_types import spec_type
    known = spec_type(written)
    if known is None or size != (8 if known.startswith("*") else sig.leaf_size(known)):
        return None
    return known


def _cxx_params(kernel: KernelInfo, source: Path | None) -> list[tuple[str | None, str | None]]:
    """(C++ type, name) of each parameter, each None where not known: the types
    from the demangled symbol (or an extern "C" kernel's declaration), the names
    from the declaration in `source`, the .cu it was compiled from."""
    from ..binary.declared_types import declared_in_source
    from ..binary.names import kernel_name, param_types
    count = len(kernel.params)
    types = param_types(kernel) if kernel.demangled else None
    symbol = kernel_name(kernel).base.split("::")[-1]
    declared = declared_in_source(source, symbol, types) if source is not None else None
    if declared is None and source is not None and types is not None:
        # a template declares `const T* in` where its instance has `float const*`: the
        # one declaration there is gives the names (the types stay the instance's)
        declared = declared_in_source(source, symbol)
    if declared is None or len(declared) != count:
        declared = [(None, None)] * count
    types = types or [cxx for cxx, _ in declared]
    names = [name for _, name in declared]
    if any(n is None or not n.isidentifier() for n in names) or len(set(names)) != count:
        names = [None] * count                      # an unnamed or odd one: p0, p1, ...
    return list(zip(types if types and len(types) == count else [None] * count, names))


# --- a plain cubin: types guessed from sizes --------------------------------


def guess_type(param: ParamInfo) -> tuple[str, str]:
    """(type as the spec spells it, why) for one parameter."""
    where = f"{param.size} byte{'s' if param.size != 1 else ''} at offset {param.offset}"
    if param.size in ALTERNATIVES:
        spelled = {8: '"*fp32"', 4: "i32", 2: "i16", 1: "i8"}[param.size]
        return spelled, f"{where}: {ALTERNATIVES[param.size]}"
    if param.size == 128 and param.offset % 64 == 0:
        return "nvTmaDesc", f"{where}, 64-aligned: a CUtensorMap, or a 128-byte struct"
    element = next(e for e in (4, 2, 1) if param.size % e == 0 and param.offset % e == 0)
    count = param.size // element
    name = f"i{8 * element}"
    members = ", ".join([name] * count) if count <= 16 else f"{name}[{count}]"
    return (f"struct[{members}]",
            f"{where}: a struct or array passed by value; list its members in order")


def path_from(spec_dir: Path, target: Path) -> str:
    """How the spec names `target`: relative to its folder, with forward slashes
    (YAML-friendly, and Windows takes them); absolute when on another drive."""
    target = target.resolve()
    try:
        return Path(os.path.relpath(target, spec_dir.resolve())).as_posix()
    except ValueError:          # Windows: path is on mount 'D:', start on mount 'C:'
        return target.as_posix()


def _guessed_starter(info: CubinInfo, kernel: KernelInfo, cubin: Path, spec_dir: Path,
                     note: str | None = None, kind: str = "cubin",
                     name: str | None = None, arch: str | None = None) -> str:
    from ..binary.names import spelled_name
    rel = path_from(spec_dir, cubin)
    written = _cxx_params(kernel, cubin if kind == "source" else None)
    guesses = []
    for param, (cxx, declared_name) in zip(kernel.params, written):
        known = cxx_type(cxx, param.size) if cxx else None
        quoted = f'"{known}"' if known and known.startswith("*") else known   # * is YAML's alias
        label = declared_name or f"p{param.ordinal}"
        guesses.append((label, quoted, f"C++ {cxx}") if known else (label, *guess_type(param)))
    n = _size_var([label for label, _, _ in guesses])
    lines = [f"# Starter spec for {kernel.cxx_name} ({info.arch}), written by "
             "`cubinrun init`."]
    if note:
        lines.append(f"# {note}")
    if any(not why.startswith("C++ ") for _, _, why in guesses):
        lines.append("# The cubin states parameter sizes, not types: a type marked `guess` is "
                     "one.")
    name = name or spelled_name(kernel, info.kernels)
    lines += ["kernel:", f"  {kind}: {rel}", f"  name: {_yaml_string(name)}"]
    if arch is not None and kind == "source":
        lines.append(f"  arch: {arch}                  # the target to compile for without a GPU")
    if not guesses:
        lines.append("signature: {}            # the kernel takes no parameters")
    else:
        lines.append("signature:")
        width = max(len(name) + len(spelled) for name, spelled, _ in guesses) + 4
        lines += [f"  {f'{name}: {spelled}':{width}} # "
                  f"{why if why.startswith('C++ ') else 'guess: ' + why}"
                  for name, spelled, why in guesses]
    if guesses:
        lines += ["vars:", f"  {n}: {PROBLEM_SIZE}                 # TODO the problem size",
                  "args:"]
        for name, spelled, _ in guesses:
            ty = sig.parse_type(spelled.strip('"'), f"signature.{name}")
            lines.append(f"  {name}: {_value(ty, n)}")
    lines += _launch_lines(kernel, with_block=True)
    if (output := _likely_output(guesses, kernel.params)) is not None:
        label, why = output
        lines.append(f"# check:                 # {why}\n#   {label}: {{expect: TODO}}")
    return "\n".join(lines) + "\n"


def _likely_output(guesses, params) -> tuple[str, str] | None:
    """The parameter a check most likely names: the first pointer C++ declares
    non-const; where no type says, the last pointer (outputs mostly follow the
    inputs); None when every pointer is const (an input) or there is none."""
    pointers = [(label, spelled, why) for (label, spelled, why), p in zip(guesses, params)
                if p.size == 8 and spelled.strip('"').startswith("*")]
    written = [label for label, spelled, why in pointers
               if why.startswith("C++ ") and not spelled.strip('"').startswith("*k")]
    if written:
        return written[0], "an output: C++ declares it non-const"
    unknown = [label for label, _, why in pointers if not why.startswith("C++ ")]
    return (unknown[-1], "guess: the last pointer, if it is the output") if unknown else None


def _yaml_string(text: str) -> str:
    """A YAML scalar for a kernel name: quoted when C++ punctuation is in it."""
    return text if text.replace("_", "a").isalnum() else '"' + text.replace('"', '\\"') + '"'


# --- a Triton cache entry: nothing to guess ---------------------------------


def _triton_entry(cubin: Path):
    """(the Triton cache entry `cubin` belongs to, None) when `X.json` beside `X.cubin`
    reads as one; else (None, a note for the spec when there is such a JSON)."""
    json_path = cubin.with_suffix(".json")
    if not json_path.is_file():
        return None, None
    from ..specfile.triton_entry import read_triton_entry
    try:
        return read_triton_entry(json_path), None
    except CubinrunError as error:
        reason = " ".join(str(error).split())[:200]
        return None, (f"{json_path.name} is beside it but does not read as a Triton cache "
                      f"entry ({reason}); if it is one, use kernel: {{triton: {json_path.name}}}"
                      " instead of guessed types.")


def _triton_starter(entry, kernel: KernelInfo, spec_dir: Path) -> str:
    rel = path_from(spec_dir, entry.json_path)
    params = entry.signature.params
    n = _size_var([name for name, _ in params])
    lines = [f"# Starter spec for the Triton kernel {entry.name}, written by `cubinrun init`.",
             f"# The cubin comes from a Triton cache entry: kernel.triton reads the launch "
             f"metadata from {entry.json_path.name}",
             f"# and the signature from {entry.json_path.with_suffix('.source').name}, so no "
             "type is guessed:",
             *(f"#   {name}: {ty}" for name, ty in params),
             "kernel:", f"  triton: {rel}",
             "vars:", f"  {n}: {PROBLEM_SIZE}                 # TODO the problem size"]
    passed = [(name, ty) for name, ty in params if not isinstance(ty, sig.ConstexprType)]
    if passed:
        lines.append("args:")
        lines += [f"  {name}: {_value(ty, n)}" for name, ty in passed]
    lines += _launch_lines(kernel, with_block=False)    # the block follows num_warps
    return "\n".join(lines) + "\n"


# --- values and launch ------------------------------------------------------


def _size_var(names) -> str:
    """The starter's problem-size var: N, unless a parameter is called that."""
    return next(v for v in ("N", "SIZE", "N_") + tuple(f"N{i}" for i in range(len(names) + 1))
                if v not in names)


def _value(ty, n: str = "N") -> str:
    """A YAML flow value the type accepts (each scalar within its type's range); `n` is
    the problem-size var."""
    if isinstance(ty, sig.ScalarType):
        dtype = ty.dtype
        if dtype.is_float:
            return "1.0"
        low, high = dtype.int_range()
        return n if low <= PROBLEM_SIZE <= high else "1"
    if isinstance(ty, sig.PointerType):
        return f"{{shape: [{n}], init: random}}"
    if isinstance(ty, sig.TmaDescType):
        return TMA_VALUE
    if isinstance(ty, sig.TensorDescType):
        return f"{{buffer: {{shape: [{', '.join(map(str, ty.block))}], init: random}}}}"
    if isinstance(ty, sig.ConstexprType):
        return "0"
    items = ty.items if isinstance(ty, sig.TupleType) else member_types(ty)
    return "[" + ", ".join(_value(item, n) for item in items) + "]"


def _launch_lines(kernel: KernelInfo, with_block: bool) -> list[str]:
    cluster = tuple(kernel.cluster) if kernel.cluster else (1, 1, 1)
    grid = [str(c) for c in cluster] if cluster != (1, 1, 1) else ["1"]
    note = (f"   # TODO programs; a multiple of the compiled cluster {list(cluster)}"
            if cluster != (1, 1, 1) else "                 # TODO programs")
    lines = [f"grid: [{', '.join(grid)}]{note}"]
    if with_block:
        if kernel.required_block:
            lines.append(f"block: [{', '.join(map(str, kernel.required_block))}]"
                         "   # required by the kernel")
        else:
            limit = 1024
            if kernel.max_threads:
                limit = kernel.max_threads[0] * kernel.max_threads[1] * kernel.max_threads[2]
            lines.append(f"block: [{min(128, limit)}]")
    return lines
