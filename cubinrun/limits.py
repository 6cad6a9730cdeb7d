"""Every bound cubinrun puts on its input, in one place.

cubinrun reads files and specs a user (or a script, or a fuzzer) hands it.
No input may hang it, exhaust memory or crash it, so each thing an input can
make large is capped here, far above what any real kernel, spec or binary
needs, and an input past a cap is refused with one line naming the cap. The
README's "Bad input" section lists them for users.
"""
from __future__ import annotations

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40

# --- files, by format: read at most this much, refuse anything larger ------
# Cubins and fatbins: the largest single-arch cubins (CUTLASS instantiations)
# are tens of MiB; the driver loads the image whole, so 256 MiB is already
# more than a module it would accept.
MAX_BINARY_BYTES = 256 * MiB
# PTX is text and about 3x its cubin.
MAX_PTX_BYTES = 256 * MiB
# CUDA C++ sources and each local header they include: generated sources
# reach a few MiB.
MAX_SOURCE_BYTES = 64 * MiB
# All local headers of one source together (includes.py follows #include).
MAX_HEADERS_BYTES = 256 * MiB
# A Triton cache entry's JSON is a few KiB of launch metadata.
MAX_TRITON_JSON_BYTES = 16 * MiB
# A Triton entry's TTIR (`.source`): a large kernel's is a few MiB.
MAX_TTIR_BYTES = 64 * MiB
# Local headers followed from one source: far above any real kernel.
MAX_HEADERS = 1000
# Samples of one run in a results file: timing takes at most 10 000.
MAX_RESULT_SAMPLES = 1_000_000
# Results held at once, parsed, by plot and tune --replay (~2 KiB each with
# their dicts): as many as the points of the largest sweep. compare and
# --baseline stream their files and hold far less per run (MAX_INDEXED_RESULTS).
MAX_RESULT_RECORDS = 100_000
# Runs compare and --baseline hold: the baseline's index (each run's line as
# bytes and its key) and NEW's run keys (to refuse a run twice) grow by a few
# hundred bytes per run; 10^6 runs compare in ~40 s and ~1 GB on 2 cores.
MAX_INDEXED_RESULTS = 5_000_000
# What is parsed whole, so held whole: one JSON document (launch --json of a
# sweep without --samples is a few MiB), or one line of JSON lines (a run with
# 10^6 samples is ~20 MiB).
MAX_RESULTS_DOCUMENT_BYTES = 64 * MiB
# A string in a results file (a spec path, a kernel's name, a point's value).
MAX_RESULT_TEXT_CHARS = 4096
# Parsed cubin facts in the cache: far above those of any cubin.
MAX_FACTS_BYTES = 64 * MiB
# A spec is written by hand or a script: a few KiB.
MAX_SPEC_BYTES = 4 * MiB
# A `.npy` header: NumPy itself refuses headers over 10000 bytes by default.
MAX_NPY_HEADER_BYTES = 10_000

# --- YAML -----------------------------------------------------------------
# Nesting of lists and mappings: a spec nests 4 deep (args.x.init.random).
MAX_YAML_DEPTH = 64
# Values after aliases are expanded: aliases share one object, but code that
# walks the tree (or an error that prints a value) pays for every copy, so a
# "billion laughs" document is refused before anything walks it.
MAX_YAML_VALUES = 100_000

# --- expressions and numbers -----------------------------------------------
# Characters in one expression: a long check.expect is a few hundred.
MAX_EXPR_CHARS = 2_000
# Nesting of one expression's syntax tree (1+1+... nests once per term, and
# the evaluator recurses once per level).
MAX_EXPR_DEPTH = 200
# Digits of an integer literal: integer results are capped at 256 bits
# (78 decimal digits) anyway, and Python refuses to convert strings of more
# than 4300 digits.
MAX_INT_DIGITS = 100
# Integer results of expressions, in bits: a huge power is an error, not a hang.
MAX_INT_BITS = 256
# Names (vars and scalar args): more than any spec, and it bounds the work of
# resolving them in dependency order.
MAX_NAMES = 10_000

# --- sweeps -------------------------------------------------------------------
# Values of one axis and points of one sweep (SPEC section 3 documents 100,000):
# counted before anything is expanded, so `[1:1e12]` is an error, not a process
# that eats the machine's memory.
MAX_AXIS_VALUES = 10_000
MAX_SWEEP_POINTS = 100_000
# pow2 axes: exponents 0..63 (a 64-bit size).
MAX_POW2_EXPONENT = 63
# Characters of one value of a string axis (a kernel or type name).
MAX_AXIS_STRING_CHARS = 200
# Decimal exponent of an axis number: range arithmetic is exact (fractions),
# and 1e-400 or 1e400 would only make it slow; no var holds such a number.
MAX_AXIS_EXPONENT = 330
# Constraints of one sweep (the spec's and --constraint).
MAX_CONSTRAINTS = 100

# --- signatures --------------------------------------------------------------
# Characters of one type string, and the nesting of tuples in a signature.
MAX_TYPE_CHARS = 4_000
MAX_TYPE_DEPTH = 16
# A whole compact signature (`gen --signature "*fp32,i32,..."`).
MAX_SIGNATURE_CHARS = 64 * KiB
# Expanded kernel parameters: a kernel's parameters take at most 32764 bytes
# (CUDA 12.1+ on Volta and later), so at most 32764 one-byte parameters.
MAX_PARAMS = 32_764

# --- binaries and Triton metadata ---------------------------------------------
# A demangler recurses on a name's structure: a crafted symbol of
# megabytes could exhaust the C stack. Real mangled names stay far below this.
MAX_DEMANGLE_CHARS = 4096
# A kernel's name in Triton's JSON.
MAX_SYMBOL_CHARS = 4096
# Triton's num_warps: 32 warps are 1024 threads, a block's maximum.
MAX_WARPS = 32
# CTAs in a cluster: 16 with the non-portable size attribute.
MAX_CLUSTER_CTAS = 16
# Scratch alignments, a power of two: far above any page size.
MAX_ALIGN = 1 << 30

# --- buffers -----------------------------------------------------------------
# Dimensions of one buffer: TMA stops at 5, NumPy at 64.
MAX_DIMS = 8
# Bytes of one buffer, and of all buffers and scratch of one launch: above
# the memory of any single GPU (and of most hosts, which hold a copy). The
# machine's real memory is checked when data is made; this bound refuses
# absurd shapes (10**12 elements) before anything is computed or allocated.
MAX_BUFFER_BYTES = 1 * TiB
MAX_DEVICE_BYTES = 1 * TiB
# bench.warmup / bench.rep and --warmup / --rep, in ms: an hour of timing.
MAX_BENCH_MS = 3_600_000
# Timing samples per run (and so --min-samples): the sampler keeps one event
# pair and one 16-byte clock record per sample.
MAX_SAMPLES = 10_000
# launch --processes: fresh processes a run's samples are gathered in, one
# after another (each opens CUDA, loads the kernel and fills its buffers).
MAX_PROCESSES = 64
# The graph timer's launches in one captured graph: a graph is instantiated
# once per run, and 10^4 nodes instantiate in milliseconds.
MAX_GRAPH_LAUNCHES = 10_000
# launch --repeat: launches compared bit for bit (each restores every buffer,
# so a race that shows once in a million runs is still within reach).
MAX_REPEAT = 1_000_000
# Dynamic shared memory is a 32-bit launch parameter.
MAX_SHARED_BYTES = 2**32 - 1

# Dynamic shared memory one block may opt in to, by SM (CUDA C++ Programming
# Guide, "Technical Specifications per Compute Capability": the maximum shared
# memory per block, which includes the kernel's static shared memory). The
# H200 reports 232448 for sm_90. An arch not listed is left to the driver.
SHARED_OPTIN_BY_SM = {
    70: 98_304, 72: 98_304, 75: 65_536,
    80: 166_912, 86: 101_376, 87: 166_912, 89: 101_376,
    90: 232_448,
    100: 232_448, 101: 232_448, 103: 232_448, 110: 232_448,
    120: 101_376, 121: 101_376,
}

# Registers one block may use (the CUDA occupancy calculator's "registers per
# block": 64K from sm_50 on, 32K on the Jetson chips sm_53 and sm_62), and the
# unit a warp's registers are allocated in (256 registers per warp).
REGISTERS_PER_BLOCK = 65_536
REGISTERS_PER_BLOCK_BY_SM = {53: 32_768, 62: 32_768}
REGISTER_ALLOCATION_UNIT = 256

# --- messages ------------------------------------------------------------------
# Characters of a bad value quoted in an error message.
MAX_QUOTED_CHARS = 60

# A check's whole-array reference (A @ B, sums, slices, Python references) when
# the host's RAM is unknown; otherwise a quarter of it ($CUBINRUN_CHECK_MEMORY).
DEFAULT_CHECK_MEMORY = 4 * GiB
