"""The keys of every spec section, in one table.

The loader refuses any key this table does not list (and takes its choices,
such as `bench.l2`'s, from here); schema.py turns the same table into the
JSON Schema that editors validate specs with, so the two cannot drift. Each
key says what kind of value it takes (`value`, a name schema.py knows:
an expression, a path, a boolean, or another section of this table) and one
line for people, shown by editors on hover.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import ELEMENT_TYPES
from ..limits import MAX_DIMS
from .model import COMPILERS, KERNEL_KINDS, L2_MODES


@dataclass(frozen=True)
class Key:
    name: str
    value: str                      # a value kind of schema.py, or "section:NAME"
    doc: str
    required: bool = False
    choices: tuple = ()             # the only values accepted, when there is such a list


INIT_NAMES = ("zeros", "ones", "arange", "random")      # `init: NAME`
DISTRIBUTIONS = ("uniform", "normal")
SWIZZLES = ("none", 0, 32, 64, 128)                     # bytes; none is 0
PADDINGS = ("zero", "nan")
DTYPES = tuple(ELEMENT_TYPES)

_KERNEL_FILES = {
    "cubin": "a compiled cubin (or an uncompressed fatbin)",
    "source": "a CUDA C++ file, compiled with NVRTC",
    "ptx": "a PTX file, compiled with nvJitLink",
    "triton": "the `<name>.json` of a Triton cache entry",
}

SECTIONS: dict[str, tuple[Key, ...]] = {
    "spec": (
        Key("kernel", "section:kernel", "The binary and the kernel in it.", required=True),
        Key("signature", "signature", "One entry per kernel parameter, in order: name to type "
            "(`i32`, `*fp32`, `constexpr`, `nvTmaDesc`, `struct[...]`, a list for a tuple). "
            "Optional for a Triton entry."),
        Key("constants", "constants", "Values of constexpr parameters (a record: not passed)."),
        Key("vars", "vars", "Named numbers or expressions; `--set NAME=VALUE` overrides one."),
        Key("args", "args", "One value per parameter: an expression for a scalar, a buffer "
            "for a pointer, a descriptor for `nvTmaDesc` / `tensordesc`, a list for a tuple or "
            "struct."),
        Key("grid", "dims", "The grid in programs: 1 to 3 expressions.", required=True),
        Key("block", "dims", "Threads per block: 1 to 3 expressions (default `32 * num_warps`)."),
        Key("launch", "section:launch", "Launch metadata: warps, clusters, shared memory, "
            "scratch."),
        Key("globals", "globals", "Module globals (`__constant__` / `__device__` variables) "
            "to write before each launch: symbol name to `{dtype, shape, init}` or "
            "`{dtype, value}`."),
        Key("check", "check", "Outputs to check: buffer or global name (or a slice of one, "
            "`\"x[1:-1, :]\"`) to a reference."),
        Key("bench", "section:bench", "Timing budget, L2 state and the work done, for "
            "throughput."),
        Key("sweep", "sweep", "Var name to values: `pow2(16, 28, 2)`, `range(2, 8, 2)`, a list "
            "of numbers or of strings, or one value."),
        Key("constraints", "constraints", "Expressions over vars a sweep's point must satisfy "
            "to run (`BX * BY <= 1024`); other points are skipped."),
        Key("sweep_invalid", "choice", "A point whose build exceeds a resource limit of the "
            "kernel is invalid: `error` (exit 3, the default) or `skip` (reported, exit "
            "unaffected).", choices=("error", "skip")),
    ),
    "kernel": tuple(Key(kind, "path", f"Path to {what}, relative to the spec; `{{NAME}}` is "
                        "a var's value.") for kind, what in _KERNEL_FILES.items()) + (
        Key("name", "string", "The kernel as written in C++: a plain name, a template instance "
            "(`reduce6<float, {BLOCK}, true>`), a full signature, or the mangled symbol; "
            "`{NAME}` is a var's value. May be left out when the binary holds one kernel."),
        Key("options", "strings", "Compiler options for `source:` kernels (`-DBLOCK={BLOCK}`, "
            "...)."),
        Key("include", "strings", "Include folders for `source:` kernels, relative to the spec."),
        Key("compiler", "choice", "What compiles a `source:` kernel: `nvrtc` (the default) or "
            "`nvcc` (a whole .cu file, host code included).", choices=COMPILERS),
        Key("arch", "arch", "The target (`sm_90`, `sm_90a`) for compiling `source:` or `ptx:` "
            "without a GPU."),
        Key("reinterpret", "strings", "Parameters the signature types apart from their C++ "
            "declaration on purpose (`[out]` for a `float*` given as `*fp16`): passed as the "
            "signature says, not refused."),
    ),
    "launch": (
        Key("num_warps", "expr", "Warps per block (`block` defaults to `32 * num_warps`); "
            "1 to 32."),
        Key("num_ctas", "expr", "CTAs per program, as Triton's `num_ctas`: a (K,1,1) cluster "
            "with the grid's x multiplied by K."),
        Key("cluster", "dims", "Cluster dims in CTAs; the grid must be a multiple."),
        Key("shared", "expr", "Dynamic shared memory in bytes."),
        Key("cooperative", "bool", "A cooperative launch (grid-wide sync)."),
        Key("pdl", "bool", "Programmatic dependent launch."),
        Key("global_scratch", "section:scratch", "Triton's global scratch: bytes per CTA, "
            "zeroed before the launch."),
        Key("profile_scratch", "section:scratch", "Triton's profile scratch: bytes per CTA."),
        Key("scratch_params", "expr", "How many trailing scratch pointers the kernel "
            "declares: 0, 1 or 2."),
    ),
    "scratch": (
        Key("size", "expr", "Bytes per CTA.", required=True),
        Key("align", "expr", "Alignment in bytes, a power of two (default 1)."),
    ),
    "buffer": (
        Key("shape", "shape", f"The dims: one expression or a list of 1 to {MAX_DIMS}.",
            required=True),
        Key("dtype", "string", "The element type, when not the pointer's.", choices=DTYPES),
        Key("init", "init", "`zeros` (default), `ones`, `arange`, `random`, or a mapping: "
            "`{random: normal, seed: 7}` (or `uniform`), `{fill: V}`, `{file: PATH.npy}`."),
        Key("save", "path", "Write the buffer after the launch to this `.npy` file."),
        Key("offset", "expr", "Elements before the array: the kernel gets the address past "
            "them (misaligned pointers)."),
    ),
    "alias": (
        Key("into", "string", "The buffer it points into: another pointer's (`x`, `p[3]` for a "
            "struct member).", required=True),
        Key("at", "expr", "Bytes past that buffer's start (default 0; at most its size)."),
    ),
    "global": (
        Key("dtype", "string", "The element type (required: the binary records only sizes).",
            required=True, choices=DTYPES),
        Key("shape", "shape", f"An array's dims: one expression or a list of 1 to {MAX_DIMS}."),
        Key("init", "init", "An array's values, as a buffer's `init` (default `zeros`)."),
        Key("value", "expr", "A scalar global's value."),
    ),
    "init": (
        Key("random", "string", "The distribution.", choices=DISTRIBUTIONS),
        Key("low", "expr", "Uniform: the lower bound (inclusive)."),
        Key("high", "expr", "Uniform: the upper bound (exclusive)."),
        Key("mean", "expr", "Normal: the mean."),
        Key("std", "expr", "Normal: the standard deviation."),
        Key("seed", "expr", "The seed (default: derived from the buffer's name)."),
        Key("fill", "expr", "Every element this value."),
        Key("file", "path", "A `.npy` file of the buffer's shape and dtype."),
    ),
    "descriptor": (
        Key("buffer", "buffer_or_name", "The pointer argument it describes, or a buffer of "
            "its own.", required=True),
        Key("block", "shape", "The box the kernel loads, in elements per dim."),
        Key("swizzle", "choice", "Swizzle in bytes.", choices=SWIZZLES),
        Key("padding", "string", "What out-of-bounds loads read.", choices=PADDINGS),
    ),
    "check_entry": (
        Key("expect", "expr", "The reference: an expression over buffers and globals (their "
            "inputs), vars and scalar args; also `A @ B`, `sum(x, axis=K)`, slices, ..."),
        Key("file", "path", "The reference as a `.npy` file."),
        Key("reference", "string", "`FILE.py:FUNCTION`, beside the spec: called as "
            "`FUNCTION(inputs, vars)`, it returns the expected array (or a dict by output)."),
        Key("rtol", "expr", "Relative tolerance (default by dtype)."),
        Key("atol", "expr", "Absolute tolerance (default by dtype)."),
        Key("exact", "bool", "Compare bit patterns (`-0.0` differs from `0.0`)."),
        Key("nan_ok", "bool", "NaN in the output matches NaN in the reference."),
    ),
    "bench": (
        Key("warmup", "expr", "Warm-up budget in ms (default 25)."),
        Key("rep", "expr", "Sampling budget in ms (default 100)."),
        Key("l2", "string", "`cold` (flushed before each sample, the default) or `hot`.",
            choices=L2_MODES),
        Key("bytes", "expr", "Bytes the kernel moves, for GB/s."),
        Key("flops", "expr", "Floating-point operations, for TFLOP/s."),
    ),
}

# Sections that need exactly one of some keys.
EXACTLY_ONE = {
    "kernel": KERNEL_KINDS,
    "init": ("random", "fill", "file"),
    "check_entry": ("expect", "file", "reference"),
    "global": ("shape", "value"),
}


def keys(section: str) -> tuple[str, ...]:
    """The keys a section accepts, in the table's order."""
    return tuple(k.name for k in SECTIONS[section])


def required(section: str) -> tuple[str, ...]:
    return tuple(k.name for k in SECTIONS[section] if k.required)


def choices(section: str, key: str) -> tuple:
    return next(k.choices for k in SECTIONS[section] if k.name == key)
