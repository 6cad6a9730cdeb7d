"""A dry run proves common data checks without NumPy (dry_checks.py): a proof
may only say "passes" where NumPy's own check passes. Each case below is
checked both ways; the cases are the values at and around every limit."""
from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from cubinrun.hostdata import dry_checks
from cubinrun.hostdata.check import check_reference
from cubinrun.dtypes import element_type
from cubinrun.errors import SpecError
from cubinrun.specfile.expr import parse_expr
from cubinrun.hostdata.values import check_init
from cubinrun.specfile.model import BufferArg, Check, Init

from support.repo import CONFIGS

DTYPES = ["i1", "i8", "u8", "i16", "u32", "i64", "u64", "fp16", "fp32", "fp64", "bf16",
          "fp8e4nv", "fp8e4b15"]
EDGES = [0, 1, -1, 2, 0.5, -0.1, 1.875, 2.0, 127, 128, -129, 255, 256, 65504, 65519.99, 65520,
         2**31, 2**63 - 1, 2**63, 2**64, 3.4028234663852886e38, 3.4028235e38, 3.5e38, 1e308,
         2**1030, float("inf"), float("-inf"), float("nan"), True, 1.5, -8, 16, 17]


def inits():
    yield Init("zeros")
    yield Init("ones")
    yield Init("arange")
    for value in EDGES:
        yield Init("fill", value=value)
    bounds = [None, -1e308, -65504.0, -129.0, -8.0, -1.0, 0.0, 0.5, 1.0, 1.9, 16.0, 255.5,
              65504.0, 1e39, 1e308, float("inf")]
    for low, high in itertools.product(bounds, bounds):
        yield Init("random", low=low, high=high)
    for mean, std in itertools.product([0.0, 1.0, -10.0, 1e4, 1e38, float("nan")],
                                       [-1.0, 0.0, 0.1, 1.0, 1e3, float("inf")]):
        yield Init("random", distribution="normal", mean=mean, std=std)
    for seed in (0, 2**63, 2**64, 2**200):
        yield Init("random", seed=seed)


def passes(fn, *args) -> bool:
    try:
        fn(*args)
    except SpecError:
        return False
    return True


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_proven_init_passes_numpys_check(dtype):
    proven = 0
    for init, shape in itertools.product(inits(), [(3,), (2049,), (65506,), (0,)]):
        buffer = BufferArg("b", element_type(dtype), shape, init)
        if dry_checks.init_passes(buffer):
            proven += 1
            assert passes(check_init, buffer), (dtype, init, shape)
    assert proven > 0


# --- references ------------------------------------------------------------

BUFFERS = {"x": ("fp32", (4, 8)), "y": ("fp64", (8,)), "z": ("fp32", (3,)),
           "i": ("i32", (8,)), "u": ("u64", (8,)), "out": ("fp32", (4, 8))}
SCALARS = {"N": 8, "A": 0.5, "BIG": 2**200, "NEG": -1, "HUGE": 2**70}
EXPRESSIONS = [
    "x + y", "x * 2 - y", "-x", "+x * A", "x + z", "x * N * N", "y + 1e308 * 10", "x + BIG",
    "x + BIG * BIG", "BIG * BIG", "N * N", "2**3", "x / y", "x / 0", "1 / 0", "x // 2",
    "u + NEG", "i + HUGE", "i + 1", "x + i", "x > 0", "sqrt(x)", "maximum(x, y)", "N",
    "HUGE", "A", "BIG", "x + HUGE", "x - x", "x * 1.5 + y * 2", "z",
]


class _Spec:
    """What reference_passes reads of a spec."""

    def __init__(self):
        self.buffers = {name: BufferArg(name, element_type(t), shape, Init("zeros"))
                        for name, (t, shape) in BUFFERS.items()}

    def expression_env(self):
        return dict(SCALARS)


@pytest.mark.parametrize("source", EXPRESSIONS)
def test_a_proven_reference_passes_numpys_check(source):
    spec = _Spec()
    check = Check("out", parse_expr(source, arrays=True))
    if dry_checks.reference_passes(check, spec):
        assert passes(check_reference, check, spec.buffers["out"], spec.buffers,
                      spec.expression_env()), source


def test_references_of_plain_arithmetic_on_float_buffers_are_proven():
    spec = _Spec()
    for source in ("x + y", "x * 2 - y", "-x", "x * 1.5 + y * 2"):
        assert dry_checks.reference_passes(Check("out", parse_expr(source, arrays=True)), spec)
    for source in ("x + z", "x / y", "sqrt(x)", "i + 1", "BIG * BIG"):   # left to NumPy
        assert not dry_checks.reference_passes(Check("out", parse_expr(source, arrays=True)),
                                               spec)


def test_the_dry_run_of_the_vector_add_does_not_import_numpy(tmp_path):
    code = ("import sys\nfrom cubinrun.cli import main\n"
            "try:\n    main(['launch', '--dry-run', sys.argv[1]])\nexcept SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "sys.stderr.write('numpy imported' if 'numpy' in sys.modules else 'no numpy')\n")
    done = subprocess.run([sys.executable, "-c", code, str(CONFIGS / "vector_add.yaml")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr.endswith("no numpy"), done.stderr
