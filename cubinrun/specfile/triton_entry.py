"""Read a Triton cache entry: launch metadata from `<name>.json`, the cubin
beside it, and the signature recovered from the TTIR in `<name>.source`.

What differs between the Triton versions this reads (3.4, 3.5, 3.6, all
checked against cubins they compiled):

- Trailing scratch parameters. 3.4 kernels declare one pointer after the
  user's parameters (global scratch) and 3.4 JSON has no `profile_scratch_*`
  keys; 3.5 and 3.6 kernels declare two (global, then profile scratch), even
  when both sizes are 0. The count is taken from which keys the JSON has.
- Clusters. 3.4 and 3.5 store `cluster_dims` ([num_ctas, 1, 1]) and their
  launchers use it; 3.6 dropped the key and uses `num_ctas`.
- Arch. The JSON stores `target.arch` as an integer (90) and a top-level
  `"arch": "sm90"`; Triton compiles capability 90 and up for the "a"
  variant (`sm_arch_from_capability`), so the cubin is sm_90a.
- TTIR parameter names. 3.5+ names arguments after the Python parameters
  (`%x_ptr`) and tags each with `loc("x_ptr"(...))`; 3.4 writes `%arg0`,
  `%arg1` with file locations, so names and tuple grouping are lost.

In every version the TTIR is signless (u32 reads back as i32), fp8e4b15 is
stored as i8, constexprs are folded away and tuples are flattened. A host
tensor descriptor is already followed by its shape (i32) and strides (i64)
in the TTIR; those are folded back into one `tensordesc<T[..]>` so that
`signature.expand` adds them again, as Triton's driver does.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..dtypes import ELEMENT_TYPES
from ..errors import SpecError, excerpt, shorten
from ..files import read_text
from ..limits import (MAX_ALIGN, MAX_BUFFER_BYTES, MAX_CLUSTER_CTAS, MAX_PARAMS,
                      MAX_SHARED_BYTES, MAX_SYMBOL_CHARS, MAX_TRITON_JSON_BYTES, MAX_TTIR_BYTES,
                      MAX_WARPS)
from . import triton_versions
from ..signature import (
    ParamType,
    PointerType,
    ScalarType,
    Signature,
    TensorDescType,
    TupleType,
)


@dataclass(frozen=True)
class TritonEntry:
    name: str
    json_path: Path
    cubin_path: Path
    num_warps: int
    num_ctas: int
    cluster_dims: tuple[int, int, int]
    shared: int
    global_scratch_size: int
    global_scratch_align: int
    profile_scratch_size: int
    profile_scratch_align: int
    cooperative: bool
    pdl: bool
    tensordesc_meta: list | None
    arch: str                    # what the cubin was compiled for: "sm_90a"
    triton_version: str | None
    num_scratch_params: int      # trailing scratch pointers the kernel declares
    signature: Signature | None  # None when not asked for
    ttir: "Ttir | None" = None   # None when the spec gives the signature and there is none
    version: tuple[int, int] | None = None      # (3, 6) from triton_version
    notes: tuple[str, ...] = ()  # for the plan: a newer release, no TTIR
    metadata: dict = field(default_factory=dict, compare=False)    # the JSON, every key

    @property
    def desc_flags(self) -> int:
        """i1 flags a decomposed tensor descriptor ends with (see triton_versions)."""
        return triton_versions.desc_flags(self.version)


def read_triton_entry(json_path: str | Path, *, with_signature: bool = True) -> TritonEntry:
    """The entry whose metadata is `json_path`; SpecError names the file at fault.

    `with_signature=False` skips the TTIR, for specs that give their own
    signature (the `.source` file may then be absent).
    """
    json_path = Path(json_path)
    if json_path.name.startswith("__grp__"):
        raise SpecError("this is Triton's group index; give the kernel's own "
                        f"{json_path.name.removeprefix('__grp__')} instead", file=str(json_path))
    meta = _load_json(json_path)
    cubin_path = json_path.with_suffix(".cubin")
    if not cubin_path.is_file():
        raise SpecError(f"the cubin {cubin_path.name} is not beside it", file=str(json_path))
    fields = _Fields(meta, str(json_path))

    name = meta.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_SYMBOL_CHARS or "\0" in name:
        raise SpecError("no kernel `name` in this Triton metadata", file=str(json_path))
    num_ctas = fields.integer("num_ctas", 1, 1, MAX_CLUSTER_CTAS)
    cluster = fields.cluster_dims(num_ctas)
    tensordesc_meta = fields.tensordesc_meta()
    raw_version = meta.get("triton_version")
    if raw_version is not None and not (isinstance(raw_version, str) and len(raw_version) < 64):
        raise SpecError(f"`triton_version` should be a string such as \"3.6.0\", got "
                        f"{excerpt(raw_version)}", file=str(json_path))

    version = triton_versions.parse_version(raw_version)
    _refuse_unsupported(meta, str(json_path))
    ttir = _ttir(json_path.with_suffix(".source"), name, with_signature, meta)

    return TritonEntry(
        name=name,
        json_path=json_path,
        cubin_path=cubin_path,
        num_warps=fields.integer("num_warps", None, 1, MAX_WARPS),
        num_ctas=num_ctas,
        cluster_dims=cluster,
        shared=fields.integer("shared", 0, 0, MAX_SHARED_BYTES),
        global_scratch_size=fields.integer("global_scratch_size", 0, 0, MAX_BUFFER_BYTES),
        global_scratch_align=fields.power_of_two("global_scratch_align"),
        profile_scratch_size=fields.integer("profile_scratch_size", 0, 0, MAX_BUFFER_BYTES),
        profile_scratch_align=fields.power_of_two("profile_scratch_align"),
        cooperative=fields.boolean("launch_cooperative_grid"),
        pdl=fields.boolean("launch_pdl"),
        tensordesc_meta=tensordesc_meta,
        arch=_arch(meta, json_path),
        triton_version=raw_version,
        num_scratch_params=("global_scratch_size" in meta) + ("profile_scratch_size" in meta),
        signature=ttir.signature if ttir and with_signature else None,
        ttir=ttir,
        version=version,
        notes=_notes(meta, version, ttir),
        metadata=meta,
    )


def _ttir(source_path: Path, name: str, required: bool, meta: dict) -> Ttir | None:
    """The TTIR beside the JSON: the signature (required when the spec gives
    none) and the specialization of each argument (checked when it reads)."""
    try:
        try:
            text = read_text(source_path, MAX_TTIR_BYTES, "TTIR")
        except SpecError as exc:
            raise SpecError(f"cannot read the TTIR to recover the signature: "
                            f"{exc.message.removeprefix(f'{source_path}: ')}",
                            file=str(source_path), line=exc.line) from None
        return read_ttir(text, kernel=name, file=str(source_path))
    except SpecError as exc:
        if not required:
            return None                 # the spec's signature stands; nothing to check
        version = meta.get("triton_version")
        if triton_versions.is_newer(triton_versions.parse_version(version)):
            exc.message += triton_versions.newer_error(version)
        raise


def _refuse_unsupported(meta: dict, file: str) -> None:
    """What Triton's launcher does for such an entry that cubinrun does not."""
    mode = meta.get("instrumentation_mode")
    if isinstance(mode, str) and "gsan" in mode:
        raise SpecError(f"compiled with instrumentation_mode {mode!r}: Triton 3.8+ passes such "
                        "a kernel three more arguments (its sanitizer's state), which cubinrun "
                        "does not make; recompile without instrumentation", file=file)
    for i, desc in enumerate(meta.get("tensordesc_meta") or ()):
        if isinstance(desc, dict) and desc.get("is_im2col"):
            raise SpecError(f"tensordesc_meta[{i}] is an im2col tensor descriptor (Triton 3.8+), "
                            "which cubinrun cannot encode; only tiled descriptors are "
                            "supported", file=file)


def _notes(meta: dict, version: tuple[int, int] | None, ttir: Ttir | None) -> tuple[str, ...]:
    """What the plan should say about this entry."""
    notes = []
    if triton_versions.is_newer(version):
        notes.append(triton_versions.newer_note(meta["triton_version"], meta))
    if ttir is None:
        notes.append("no readable TTIR beside the entry: the arguments are not checked "
                     "against what Triton specialized the kernel for")
    return tuple(notes)


class _Fields:
    """Each field of the JSON checked for its type and range: a Triton entry
    edited by hand (or damaged) must not be read as something else, such as
    `"launch_pdl": "false"`, a non-empty string, read as true."""

    def __init__(self, meta: dict, file: str):
        self.meta, self.file = meta, file

    def fail(self, key: str, expected: str, value) -> SpecError:
        return SpecError(f"`{key}` should be {expected}, got {excerpt(value)}", file=self.file)

    def integer(self, key: str, default: int | None, low: int, high: int) -> int:
        value = self.meta.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, f"an integer in [{low}, {high}]", value)
        return value

    def power_of_two(self, key: str) -> int:
        value = self.integer(key, 1, 1, MAX_ALIGN)
        if value & (value - 1):
            raise self.fail(key, "a power of two", value)
        return value

    def boolean(self, key: str) -> bool:
        value = self.meta.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def cluster_dims(self, num_ctas: int) -> tuple[int, int, int]:
        value = self.meta.get("cluster_dims")
        if value is None:
            return (num_ctas, 1, 1)
        if not (isinstance(value, list) and len(value) == 3
                and all(isinstance(v, int) and not isinstance(v, bool)
                        and 1 <= v <= MAX_CLUSTER_CTAS for v in value)):
            raise self.fail("cluster_dims", f"three integers in [1, {MAX_CLUSTER_CTAS}]", value)
        return tuple(value)

    def tensordesc_meta(self) -> list | None:
        value = self.meta.get("tensordesc_meta")
        if value is None:
            return None
        if not isinstance(value, list) or len(value) > MAX_PARAMS:
            raise self.fail("tensordesc_meta", "a list", value)
        for i, entry in enumerate(value):
            if entry is not None and not _valid_desc_meta(entry):
                raise self.fail(f"tensordesc_meta[{i}]", "null or {elem_type, elem_size, "
                                "block_size, swizzle, fp4_padded}", entry)
        return value


def _valid_desc_meta(entry) -> bool:
    """One tensor descriptor's TMA encoding, as Triton writes it."""
    def small(v, high):
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= high
    block = entry.get("block_size") if isinstance(entry, dict) else None
    return (isinstance(entry, dict) and small(entry.get("elem_type"), 63)
            and entry.get("elem_size") in (1, 2, 4, 8) and small(entry.get("swizzle"), 3)
            and isinstance(block, list) and 1 <= len(block) <= 5
            and all(small(b, 256) and b > 0 for b in block)
            and isinstance(entry.get("fp4_padded", False), bool))


def _load_json(path: Path) -> dict:
    try:
        text = read_text(path, MAX_TRITON_JSON_BYTES, "Triton metadata")
    except SpecError as exc:
        raise SpecError(f"cannot read the Triton metadata: "
                        f"{exc.message.removeprefix(f'{path}: ')}", file=str(path),
                        line=exc.line) from None
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"not valid JSON ({exc.msg})", file=str(path), line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:     # a 5000-digit number, deep nesting
        why = "nested too deeply" if isinstance(exc, RecursionError) else shorten(str(exc))
        raise SpecError(f"not valid JSON ({why})", file=str(path)) from None
    if not isinstance(meta, dict):
        raise SpecError("Triton metadata should be a JSON object", file=str(path))
    return meta


def _arch(meta: dict, path: Path) -> str:
    target = meta.get("target")
    arch = target.get("arch") if isinstance(target, dict) else None
    if isinstance(arch, bool) or not isinstance(arch, int) or not 10 <= arch <= 999:
        raise SpecError("no integer `target.arch` (a compute capability such as 90) in this "
                        "Triton metadata", file=str(path))
    if target.get("backend") != "cuda":
        raise SpecError(f"this entry is for the {excerpt(target.get('backend'))} backend, not cuda",
                        file=str(path))
    capability = target["arch"]
    # Triton's sm_arch_from_capability: 90 and up are compiled as the "a" variant.
    return f"sm_{capability}" + ("a" if capability >= 90 else "")


# --- the signature, from the TTIR --------------------------------------------

# MLIR element types to Triton's names. The TTIR is signless (u32 is i32) and
# Triton stores fp8e4b15 as i8, so those come back as the signed integer.
_MLIR_TYPES = {
    "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64",
    "f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64",
    "f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5",
}
_FUNC = re.compile(r"tt\.func\s+public\s+@([\w$.]+)\s*\(")
_ARG = re.compile(r"%([\w$.-]+)\s*:\s*")
_NAME_LOC = re.compile(r'loc\("((?:[^"\\]|\\.)*)"\s*[()]')
_LOC_ALIAS = re.compile(r"loc\((#[\w$.-]+)\)")
_PTR = re.compile(r"!tt\.ptr<(\w+)(?:,\s*\d+)?>")
# 3.4-3.7 write !tt.tensordesc<tensor<64x64xf16>>, 3.8+ !tt.tensordesc<64x64xf16>.
_DESC = re.compile(r"!tt\.tensordesc<(?:tensor<)?((?:\d+x)+)(\w+)(?:,[^>]*)?>?>")
_DIVISIBILITY = re.compile(r"\btt\.divisibility\s*=\s*(\d+)")


@dataclass
class _Arg:
    ssa_name: str      # "%x_ptr" without the %
    mlir_type: str
    loc_name: str | None    # the Python parameter it came from (3.5+)
    divisibility: int | None = None     # tt.divisibility: what Triton specialized it for

    @property
    def param(self) -> str | None:
        """The Python parameter: 3.8+ names a tuple's elements `t.0`, `t.1`."""
        return self.loc_name.split(".")[0] if self.loc_name else None


@dataclass(frozen=True)
class Ttir:
    """What the TTIR says: the signature, and each argument's specialization.

    `args` are the TTIR arguments in order as (is a tensor descriptor, its
    block rank, tt.divisibility or None); `leaf_divisibility` lines them up with
    the parameters `signature.expand` gives, which a decomposed descriptor
    makes more of than the TTIR has."""
    signature: Signature
    args: tuple[tuple[bool, int, int | None], ...]
    names: tuple[str, ...]             # the Python parameter names (3.5+), in order

    def leaf_divisibility(self, tensordesc_meta, desc_flags: int) -> tuple[int | None, ...]:
        metas = iter(tensordesc_meta or ())
        out: list[int | None] = []
        i = 0
        while i < len(self.args):
            is_desc, rank, divisibility = self.args[i]
            out.append(divisibility)
            i += 1
            if is_desc:
                if next(metas, None) is None:           # base, shape, strides, flags
                    out.extend([None] * (2 * rank + desc_flags))
                tail = self.args[i:i + 2 * rank]
                out.extend(d for _, _, d in tail)
                i += 2 * rank
        return tuple(out)


def signature_from_ttir(text: str, *, kernel: str | None = None, file: str = "TTIR") -> Signature:
    """The kernel's parameters, from the `tt.func public` in Triton's TTIR."""
    return read_ttir(text, kernel=kernel, file=file).signature


def read_ttir(text: str, *, kernel: str | None = None, file: str = "TTIR") -> Ttir:
    """The signature and the specialization of each argument, from the TTIR."""
    args = _func_args(text, kernel, file)
    units: list[tuple[str | None, str, ParamType]] = []   # (parameter, ssa name, type)
    specialized: list[tuple[bool, int, int | None]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        ty = _param_type(arg, file)
        i += 1
        is_desc = isinstance(ty, TensorDescType)
        specialized.append((is_desc, ty.ndim if is_desc else 0, arg.divisibility))
        if is_desc:
            end = _skip_desc_tail(args, i, ty, arg, file)
            specialized.extend((False, 0, a.divisibility) for a in args[i:end])
            i = end
        units.append((arg.param, arg.ssa_name, ty))

    params: list[tuple[str, ParamType]] = []
    used: set[str] = set()
    j = 0
    while j < len(units):
        loc_name, ssa_name, ty = units[j]
        k = j + 1
        # Consecutive units from one Python parameter are a flattened tuple.
        while loc_name and k < len(units) and units[k][0] == loc_name:
            k += 1
        if k - j > 1 or (loc_name and args_named_as_tuple(args, ssa_name)):
            ty = TupleType(tuple(u[2] for u in units[j:k]))
        params.append((_identifier(loc_name or ssa_name, used), ty))
        j = k
    names = tuple(name for name, _ in params) if any(a.loc_name for a in args) else ()
    return Ttir(Signature(tuple(params)), tuple(specialized), names)


def args_named_as_tuple(args: list[_Arg], ssa_name: str) -> bool:
    """A one-element tuple: 3.8+ names its element `t.0`."""
    arg = next(a for a in args if a.ssa_name == ssa_name)
    return "." in (arg.loc_name or "")


def _func_args(text: str, kernel: str | None, file: str) -> list[_Arg]:
    funcs = list(_FUNC.finditer(text))
    if not funcs:
        raise SpecError("no `tt.func public` in this TTIR: cannot recover the signature",
                        file=file)
    match = next((m for m in funcs if m.group(1) == kernel), funcs[0])
    body = _balanced(text, match.end() - 1, file)
    aliases = dict(re.findall(r"^(#[\w$.-]+)\s*=\s*(loc\(.*\))\s*$", text, re.MULTILINE))
    args = []
    for piece in _split_top(body):
        m = _ARG.match(piece)
        if not m:
            raise SpecError(f"cannot read the kernel argument {excerpt(piece)}", file=file)
        rest = piece[m.end():]
        mlir_type = _type_token(rest)
        tail = rest[len(mlir_type):]
        divisibility = _DIVISIBILITY.search(tail.split(" loc(")[0])
        if alias := _LOC_ALIAS.search(tail):
            tail = aliases.get(alias.group(1), "")
        loc = _NAME_LOC.search(tail)
        args.append(_Arg(m.group(1), mlir_type, _unescape(loc.group(1)) if loc else None,
                         int(divisibility.group(1)) if divisibility else None))
    return args


def _unescape(mlir_string: str) -> str:
    """MLIR prints `"` and `\\` in strings as hex escapes (`\\22`)."""
    return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), mlir_string)


def _outside_strings(text: str, start: int = 0):
    """(index, char) of every character of `text` from `start` that is not
    inside a double-quoted string (the quotes themselves included)."""
    i, in_string = start, False
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1                      # skip the escaped character
            elif ch == '"':
                in_string = False
        else:
            if ch == '"':
                in_string = True
            yield i, ch
        i += 1


def _balanced(text: str, open_at: int, file: str) -> str:
    """The text inside the parenthesis at `open_at`, skipping quoted strings."""
    depth = 0
    for i, ch in _outside_strings(text, open_at):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[open_at + 1:i]
    raise SpecError("the kernel's argument list never closes", file=file)


def _split_top(body: str) -> list[str]:
    """Split the argument list on commas outside brackets and strings."""
    parts, depth, start = [], 0, 0
    for i, ch in _outside_strings(body):
        if ch in "(<{[":
            depth += 1
        elif ch in ")>}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    last = body[start:].strip()
    return parts + [last] if last else parts


def _type_token(rest: str) -> str:
    """The type at the start of `rest`: up to the first space outside <>."""
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch.isspace() and depth == 0:
            return rest[:i]
    return rest


def _param_type(arg: _Arg, file: str) -> ParamType:
    t = arg.mlir_type
    if t in _MLIR_TYPES:
        return ScalarType(ELEMENT_TYPES[_MLIR_TYPES[t]])
    if m := _PTR.fullmatch(t):
        if m.group(1) in _MLIR_TYPES:
            return PointerType(ELEMENT_TYPES[_MLIR_TYPES[m.group(1)]])
    elif m := _DESC.fullmatch(t):
        if m.group(2) in _MLIR_TYPES:
            digits = m.group(1).rstrip("x").split("x")
            if len(digits) <= 5 and all(len(d) <= 4 for d in digits):    # TMA: <= 256
                dims = tuple(int(d) for d in digits)
                return TensorDescType(ELEMENT_TYPES[_MLIR_TYPES[m.group(2)]], dims)
    raise SpecError(f"kernel argument %{arg.ssa_name} has type {t}, which cubinrun "
                    "cannot pass; give the signature in the spec", file=file)


def _skip_desc_tail(args: list[_Arg], i: int, desc: TensorDescType, arg: _Arg,
                    file: str) -> int:
    """Check and skip the shape (i32) and strides (i64) Triton adds after a descriptor."""
    expected = ["i32"] * desc.ndim + ["i64"] * desc.ndim
    found = [a.mlir_type for a in args[i:i + len(expected)]]
    if found != expected:
        raise SpecError(f"tensor descriptor %{arg.ssa_name} should be followed by "
                        f"{', '.join(expected)} (its shape and strides), found "
                        f"{', '.join(found) or 'nothing'}", file=file)
    return i + len(expected)


def _identifier(name: str, used: set[str]) -> str:
    """A Python identifier, unique within the signature."""
    ident = re.sub(r"\W", "_", name)
    if not ident.isidentifier():
        ident = "arg_" + ident
    candidate, n = ident, 1
    while candidate in used:
        candidate = f"{ident}_{n}"
        n += 1
    used.add(candidate)
    return candidate
