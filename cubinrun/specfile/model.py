"""The spec as typed objects. Paths are already resolved against the spec's folder,
expressions already evaluated: these are plain values."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from .. import signature as sig
from ..dtypes import ElementType
from .expr import Expr

KERNEL_KINDS = ("cubin", "source", "ptx", "triton")
COMPILERS = ("nvrtc", "nvcc")     # what compiles a `source:` kernel
INIT_KINDS = ("zeros", "ones", "arange", "random", "fill", "file")


@dataclass(frozen=True)
class KernelRef:
    kind: str                       # one of KERNEL_KINDS
    path: Path                      # resolved against the spec's folder
    name: str | None                # entry symbol; None: the binary's only kernel
    options: tuple[str, ...] = ()   # compiler options for `source:`
    arch: str | None = None         # compile target without a GPU (`source:` / `ptx:`)
    include: tuple[Path, ...] = ()  # include folders for `source:`, resolved
    compiler: str = "nvrtc"         # one of COMPILERS, for `source:`
    reinterpret: tuple[str, ...] = ()   # parameters typed apart from their C++ type on purpose


# `random`'s defaults by kind and the normal's reach (in std): hostdata draws
# by them and dry_checks proves a dry run's checks by them.
DEFAULT_UNIFORM = {"float": (-1.0, 1.0), "int": (-8, 8), "uint": (0, 16), "bool": (0, 2)}
NORMAL_SIGMAS = 6.0                 # mean +- this many std must fit the dtype


@dataclass(frozen=True)
class Init:
    kind: str                       # one of INIT_KINDS
    distribution: str = "uniform"   # random: uniform | normal
    low: float | None = None        # uniform bounds (defaults by dtype)
    high: float | None = None
    mean: float = 0.0               # normal parameters
    std: float = 1.0
    seed: int | None = None
    value: Any = None               # fill value
    path: Path | None = None        # file: a .npy

    def describe(self) -> str:
        if self.kind == "random":
            if self.distribution == "normal":
                text = f"random normal(mean={self.mean}, std={self.std})"
            else:
                bounds = "" if self.low is None and self.high is None else f"[{self.low}, {self.high})"
                text = f"random uniform{bounds}"
            return text + ("" if self.seed is None else f" seed={self.seed}")
        if self.kind == "fill":
            return f"fill {self.value}"
        if self.kind == "file":
            return f"file {self.path}"
        return self.kind


@dataclass(frozen=True)
class BufferArg:
    name: str
    dtype: ElementType
    shape: tuple[int, ...]
    init: Init
    save: Path | None = None
    offset: int = 0                 # elements before the array: the kernel's pointer is past them
    section: str = "args"           # where the spec gives it: "args", or "globals" for a module global

    @property
    def offset_bytes(self) -> int:
        return self.offset * self.dtype.size

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.size


@dataclass(frozen=True)
class BufferRef:
    """A pointer parameter: the buffer it points to, or None for a null pointer;
    `at` bytes past the buffer's start for a pointer into another's buffer
    (`{into: NAME, at: K}`: captured pointers that share an allocation)."""
    name: str
    buffer: str | None
    at: int = 0


@dataclass(frozen=True)
class ScalarArg:
    name: str
    type: ElementType
    value: int | float


@dataclass(frozen=True)
class ConstArg:
    """A constexpr parameter's recorded value: compiled in, never passed."""
    name: str
    value: Any


@dataclass(frozen=True)
class DescArg:
    """A TMA descriptor (`nvTmaDesc`) or Triton tensor descriptor over a buffer."""
    name: str
    kind: str                       # "nvTmaDesc" or "tensordesc"
    buffer: str
    block: tuple[int, ...]
    swizzle: int | None = None
    padding: str = "zero"           # "zero" or "nan"


@dataclass(frozen=True)
class TupleArg:
    name: str
    items: tuple["Arg", ...]


@dataclass(frozen=True)
class StructArg:
    """A struct, array or vector passed by value (one parameter): its members'
    args in order, named `p[0]`, `p[1][2]` like a tuple's elements."""
    name: str
    type: Any                       # aggregates.StructType or ArrayType
    members: tuple["Arg", ...]


Arg = Union[BufferRef, ScalarArg, ConstArg, DescArg, TupleArg, StructArg]


@dataclass(frozen=True)
class Scratch:
    size: int = 0
    align: int = 1


@dataclass(frozen=True)
class Launch:
    num_warps: int = 4
    num_ctas: int = 1
    cluster: tuple[int, int, int] | None = None
    shared: int = 0
    cooperative: bool = False
    pdl: bool = False
    global_scratch: Scratch = Scratch()
    profile_scratch: Scratch = Scratch()
    scratch_params: int = 0         # trailing scratch pointers the kernel declares (0-2)


@dataclass(frozen=True)
class PythonReference:
    """`reference: FILE.py:FUNCTION`: found in the file by parsing, not run yet."""
    path: Path
    function: str
    line: int                       # of the `def`

    def describe(self) -> str:
        return f"{self.path.name}:{self.function}"


@dataclass(frozen=True)
class Check:
    output: str                     # the buffer or global checked
    expect: Expr | None = None
    file: Path | None = None
    rtol: float | None = None
    atol: float | None = None
    exact: bool = False
    nan_ok: bool = False
    reference: PythonReference | None = None
    region: tuple | None = None     # `"x[1:-1, :]"`: the index (slices and ints) checked
    key: str | None = None          # the check's key as written, when a region
    line: int | None = None         # the YAML line of the check's key

    @property
    def name(self) -> str:
        return self.key or self.output


L2_MODES = ("cold", "hot")


def budget_problem(value: Any) -> str | None:
    """What is wrong with a timing budget in ms, or None. The one rule for the
    spec's bench.warmup / bench.rep and the command line's --warmup / --rep."""
    from ..limits import MAX_BENCH_MS
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 < value <= MAX_BENCH_MS:                   # NaN and infinity too
        return f"must be a positive number of ms up to {MAX_BENCH_MS}, got {value}"
    return None


@dataclass(frozen=True)
class Bench:
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    l2: str = "cold"
    bytes: float | None = None
    flops: float | None = None


@dataclass(frozen=True)
class Spec:
    path: Path
    kernel: KernelRef
    signature: sig.Signature
    args: tuple[Arg, ...]                   # one per signature parameter, in order
    buffers: dict[str, BufferArg]           # every device buffer, by name
    vars: dict[str, int | float]
    scalars: dict[str, int | float]         # top-level scalar args, by name
    grid: tuple[int, int, int]              # in programs, as Triton counts them
    block: tuple[int, int, int]
    launch: Launch
    checks: tuple[Check, ...] = ()
    bench: Bench = Bench()
    constants: dict[str, Any] = field(default_factory=dict)
    tensordesc_meta: tuple | None = None    # Triton's, one entry per tensor descriptor
    desc_flags: int = 1                     # i1 flags ending a decomposed descriptor (by Triton release)
    device_values: dict[str, int] = field(default_factory=dict)   # sm_count ... the spec used
    device_source: str | None = None        # where they came from, for the plan
    notes: tuple[str, ...] = ()             # for the plan: folded Triton arguments, ...
    divisibility: tuple | None = None       # a Triton entry's tt.divisibility per leaf
    arg_lines: dict[str, int] = field(default_factory=dict)    # YAML line of each arg
    globals: dict[str, BufferArg] = field(default_factory=dict)  # module globals, by symbol
    global_lines: dict[str, int] = field(default_factory=dict)  # YAML line of each global

    @property
    def launched_grid(self) -> tuple[int, int, int]:
        """The grid in CTAs: Triton's num_ctas multiplies x."""
        return (self.grid[0] * self.launch.num_ctas, self.grid[1], self.grid[2])

    def leaves(self) -> list[sig.Leaf]:
        return sig.expand(self.signature, self.tensordesc_meta, self.desc_flags)

    def expression_env(self) -> dict[str, int | float]:
        return {**self.device_values, **self.vars, **self.scalars}
