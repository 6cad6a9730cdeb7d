"""Property-based fuzzing (Hypothesis) of everything a user hands cubinrun.

Inputs are the sample files (configs/, kernels/, tests/fixtures/) mutated:
specs with values swapped for hostile ones and bytes inserted, expressions
and signatures from a grammar and from noise, cubins and fatbins with bytes
and header fields overwritten, Triton entries with JSON fields retyped and
TTIR damaged, saved `props --json` files with fields retyped and bytes
inserted, result files edited and with hostile numbers. The property, for every input, run through the CLI in this
process: the exit code is 0-4, nothing escapes but SystemExit (no
traceback), an error is one line, it returns within a few seconds and the
process's peak memory stays bounded.

Profiles (the environment variable CUBINRUN_FUZZ):
- unset: the CI profile, a fixed number of derandomized examples per target
  (deterministic, a few seconds each);
- `long`: random examples, each target for CUBINRUN_FUZZ_SECONDS (default
  120) split evenly, with Hypothesis's example database in `.hypothesis/`.
  CUBINRUN_FUZZ_REPORT=FILE appends one line per target: inputs tried.

The launcher's C compile is replaced by its code generation here (a mutated
signature would otherwise cost a compiler run per example); the launcher
cache is fuzzed by its own tests.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
from support.repo import REPO
try:
    import resource
except ImportError:             # Windows: peak memory is not checked there
    resource = None
import shutil
import tempfile
import time
import types
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cubinrun.cli import main  # noqa: E402

LONG = os.environ.get("CUBINRUN_FUZZ") == "long"
TARGETS = 12
BUDGET = float(os.environ.get("CUBINRUN_FUZZ_SECONDS", "120")) / TARGETS
SLOW_SECONDS = 10.0                 # generous: CI machines are shared
MAX_RSS_BYTES = 3 << 30             # the test process's peak, all examples together

settings.register_profile(
    "cubinrun-ci", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=list(HealthCheck))
settings.register_profile(
    "cubinrun-long", derandomize=False, deadline=None, print_blob=True,
    suppress_health_check=list(HealthCheck))
PROFILE = settings.get_profile("cubinrun-long" if LONG else "cubinrun-ci")


def _rewrite_paths(text: str) -> str:
    return text.replace("../kernels/", f"{REPO}/kernels/")


SPEC_SEEDS = {p.name: _rewrite_paths(p.read_text()) for p in sorted((REPO / "configs").glob("*.yaml"))}
BINARY_SEEDS = [p.read_bytes() for p in sorted(
    [*(REPO / "kernels" / "build").glob("*.cubin"), *(REPO / "tests" / "fixtures" / "cubins").glob("*"),
     *(REPO / "tests" / "fixtures" / "triton").rglob("*.cubin")])]
TRITON_SEEDS = sorted(p.parent for p in (REPO / "kernels" / "triton").rglob("*.json")
                      if not p.name.startswith("__grp__"))

# --- running the CLI and checking the property ---------------------------


class Outcome:
    def __init__(self, code, stderr: str, seconds: float):
        self.code, self.stderr, self.seconds = code, stderr, seconds


def run_cli(*args: str, many: bool = False, codes=(0, 1, 2, 3, 4)) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as done:
            code = done.code
        else:
            code = None
    outcome = Outcome(code, err.getvalue(), time.perf_counter() - start)
    check_property(outcome, args, many, codes)
    return outcome


def check_property(outcome: Outcome, args, many: bool = False, codes=(0, 1, 2, 3, 4)) -> None:
    """`many`: a sweep, whose failed points each have their one line; `codes`:
    the exit codes the command may end with."""
    what = " ".join(map(str, args))[:200]
    assert outcome.code in codes, (outcome.code, what, outcome.stderr[-2000:])
    assert "Traceback" not in outcome.stderr, (what, outcome.stderr[-3000:])
    lines = outcome.stderr.strip().splitlines()
    if many and len(lines) > 1:
        assert all(line.startswith(("error: ", "invalid: ")) and len(line) < 1000
                   for line in lines), (what, outcome.stderr[-2000:])
    elif outcome.code not in (0, 1, 3, 5):      # 3 may print the compiler's log first
        assert len(lines) == 1 and len(lines[0]) < 1000, (what, outcome.stderr[-2000:])
    assert outcome.seconds < SLOW_SECONDS, (what, outcome.seconds)
    if resource is not None:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        assert rss < MAX_RSS_BYTES, (what, rss)


@pytest.fixture(autouse=True)
def _generated_launchers(monkeypatch):
    """The launcher's source is generated (that is fuzzed), not compiled."""
    from cubinrun import launcher
    from cubinrun.launcher import generate_source

    def load(leaf_types, num_scratch=0):
        generate_source(list(leaf_types), num_scratch)
        return types.SimpleNamespace(__file__="<generated, not compiled>")
    monkeypatch.setattr(launcher, "load_launcher", load)


counts: dict[str, int] = {}


def fuzz(name: str, inner) -> None:
    """Run the Hypothesis test `inner` once (CI) or until the budget is spent (long)."""
    counts.setdefault(name, 0)
    start = time.monotonic()
    while True:
        inner()
        if not LONG or time.monotonic() - start > BUDGET:
            break
    if report := os.environ.get("CUBINRUN_FUZZ_REPORT"):
        with open(report, "a") as f:
            f.write(f"{name}: {counts[name]} inputs in {time.monotonic() - start:.0f} s\n")


def examples(ci: int) -> settings:
    return settings(PROFILE, max_examples=500 if LONG else ci)


# --- strategies -----------------------------------------------------------

NASTY = [
    "10**9", "2**62", "2**300", "-1", "0", ".nan", ".inf", "-.inf", "1e400", "1e-400", "cdiv(N)",
    "max(N, 1024)", "min(N, 2, 3)", "[" * 70 + "]" * 70, "&a [1, 2]", "*a", "'", '"', "!!binary AA",
    "0x" + "f" * 120, "9" * 120, "(" * 300 + "1" + ")" * 300, "+".join(["1"] * 1500), "N",
    "x + y", "1/0", "N // 0", "N % 0", "[N, N]", "[0]", "[2**40, 2**40]", "{fill: 300}",
    "{fill: .nan}", "{file: x.npy}", "{random: normal, low: 1}", "{random: uniform, low: 5, high: 1}",
    "*fp32", "*i8", "i8", "u64", "(i32,fp16)", "[i32, [fp16, *fp32]]", "tensordesc<fp32[64,64]>",
    "tensordesc<fp32[999999999999999999999,1]>", "nvTmaDesc", "constexpr", "null", "true", "[]", "{}",
    "{buffer: x, block: [8]}", "maximum(x, y)", "where(x > 0, x, 0)", "sqrt(-1)", "log2(0)",
    "next_pow2(2**255)", "abs(-2**256)", "x[0]", "x.y", "__import__('os')", "lambda: 1", "\t",
    "ünïcödé", "\u202e", "1" * 5000, "a" * 70000, "~1", "not 1", "1 if 1 else 2", "[1, 2][0]",
]


def values():
    return st.one_of(
        st.sampled_from(NASTY),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=40).map(json.dumps),
    )


_LINE = re.compile(r"^(\s*(?:- )?[\w.-]+:\s*)(.+)$", re.M)


@st.composite
def mutated_spec(draw) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(SPEC_SEEDS)))
    text = SPEC_SEEDS[name]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["value", "value", "value", "drop", "dup", "chars", "key"]))
        lines = text.splitlines()
        if kind == "value" and (matches := list(_LINE.finditer(text))):
            m = draw(st.sampled_from(matches))
            text = text[:m.start(2)] + draw(values()) + text[m.end(2):]
        elif kind == "drop" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
            text = "\n".join(lines)
        elif kind == "dup" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif kind == "chars":
            at = draw(st.integers(0, len(text)))
            junk = draw(st.text(alphabet="[]{}:,&*!|>'\"#-? \n\t\0\x85\ufeffaN1(", max_size=6))
            text = text[:at] + junk + text[at:]
        elif kind == "key":
            section = draw(st.sampled_from(["vars", "launch", "bench", "args", "check", "grid"]))
            text += f"\n{section}:\n  {draw(st.from_regex(r'[a-zA-Z_][a-zA-Z0-9_]{0,8}', fullmatch=True))}: {draw(values())}\n"
    return name, text


def expressions():
    leaf = st.one_of(st.integers(-(2**300), 2**300).map(str), st.sampled_from(
        ["N", "x", "y", "n", "t[0]", "1.5", "1e308", "0", "-0.0", "inf", "nan", "BLOCK"]))

    def combine(children):
        binary = st.tuples(children, st.sampled_from(
            ["+", "-", "*", "/", "//", "%", "**", "<", "==", ">=", "@"]), children).map(" ".join)
        calls = st.tuples(st.sampled_from(
            ["cdiv", "min", "max", "abs", "next_pow2", "log2", "sqrt", "where", "maximum", "foo",
             "sum", "mean", "prod", "cumsum", "transpose", "roll", "astype"]),
            st.lists(children, max_size=4),
            st.sampled_from(["", ", axis=0", ", axis=-1", ", axis=N", ", keepdims=1"])
        ).map(lambda t: f"{t[0]}({', '.join(t[1])}{t[2] if t[1] else ''})")
        whole = st.one_of(   # check.expect's operations on whole arrays
            st.tuples(children, children).map(lambda t: f"reshape({t[0]}, [{t[1]}, -1])"),
            children.map(lambda c: f"astype({c}, fp16)"),
            children.map(lambda c: f"({c}).T"),
            st.tuples(children, children, children).map(lambda t: f"({t[0]})[{t[1]}:{t[2]}]"),
            st.tuples(children, children).map(lambda t: f"({t[0]})[::{t[1]}, 0]"))
        return st.one_of(binary, calls, whole, children.map(lambda c: f"({c})"),
                         children.map(lambda c: f"-{c}"))

    return st.one_of(st.recursive(leaf, combine, max_leaves=30),
                     st.text(alphabet="0123456789+-*/%()<>=, Nxy[]._e@:T", max_size=80))


def signature_texts():
    atom = st.sampled_from(["i1", "i8", "i16", "i32", "i64", "u8", "u64", "fp16", "bf16", "fp32",
                            "fp64", "*fp32", "*kfp16", "*fp8e4nv", "*fp8e4b15", "constexpr",
                            "nvTmaDesc", "tensordesc<fp32[64,64]>", "tensordesc<bf16[8]>", "f32",
                            "*void", "", "tensordesc<fp32[0]>", "tensordesc<fp32[1,2,3,4,5,6]>"])
    grammar = st.recursive(atom, lambda c: st.lists(c, min_size=1, max_size=4).map(
        lambda items: "(" + ",".join(items) + ")"), max_leaves=20)
    return st.one_of(st.lists(grammar, max_size=12).map(",".join),
                     st.text(alphabet="()<>[],*kfpiu0123468 ", max_size=60))


@st.composite
def mutated_binary(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(BINARY_SEEDS)))
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 8))):
        op = rng.random()
        at = rng.randrange(len(data) or 1)
        if op < 0.35:
            data[at:at + 1] = bytes([rng.randrange(256)])
        elif op < 0.65:                                   # an 8-byte field: offsets, sizes
            at &= ~7
            value = rng.choice([0, 1, 2**63, 2**64 - 1, 2**64 - 64, 2**32 - 1, len(data),
                                rng.randrange(2**64)])
            data[at:at + 8] = value.to_bytes(8, "little")
        elif op < 0.8:                                    # the ELF / fatbin header
            at = rng.randrange(0, 64) & ~1
            data[at:at + 2] = rng.randrange(65536).to_bytes(2, "little")
        elif op < 0.9:
            del data[at:]
        else:
            data[at:at] = rng.randbytes(rng.randint(1, 16))
    return bytes(data)


def json_values():
    return st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                  st.floats(allow_nan=False), st.text(max_size=10),
                  st.sampled_from(["false", "true", "3.6.0", "cuda", "sm90", 3.6])),
        lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.text(max_size=8), c, max_size=4)),
        max_leaves=10)


TRITON_KEYS = ["num_warps", "num_ctas", "shared", "global_scratch_size", "global_scratch_align",
               "profile_scratch_size", "profile_scratch_align", "launch_cooperative_grid",
               "launch_pdl", "tensordesc_meta", "target", "triton_version", "cluster_dims", "name"]

# --- the targets -----------------------------------------------------------


def test_fuzz_specs():
    @examples(60)
    @given(mutated_spec())
    def inner(case):
        name, text = case
        counts["specs"] += 1
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            run_cli("launch", "--dry-run", "--json", "--arch", "sm_90", str(path))
            run_cli("gen", str(path), "-o", str(Path(tmp) / "l.c"))
    fuzz("specs", inner)


def test_fuzz_expressions(tmp_path):
    seed = SPEC_SEEDS["vector_add.yaml"]

    @examples(80)
    @given(expressions(), st.sampled_from(["grid: [cdiv(N, BLOCK)]", "  bytes: 12 * N",
                                           "  out: {expect: x + y, rtol: 1e-6}", "  N: 1048576"]))
    def inner(expression, where):
        counts["expressions"] += 1
        key, _, _ = where.partition(":")
        line = (f"{key}: [{expression}]" if key == "grid"
                else f"  out: {{expect: {json.dumps(expression)}}}" if "expect" in where
                else f"{key}: {json.dumps(expression)}")
        path = tmp_path / "expr.yaml"
        path.write_text(seed.replace(where, line))
        run_cli("launch", "--dry-run", str(path))
        run_cli("launch", "--dry-run", "--set", f"N={expression}", str(path))
    fuzz("expressions", inner)


def test_fuzz_signatures(tmp_path):
    @examples(80)
    @given(signature_texts(), st.integers(0, 2))
    def inner(text, scratch):
        counts["signatures"] += 1
        run_cli("gen", "--signature", text, "--scratch", str(scratch), "-o", str(tmp_path / "l.c"))
    fuzz("signatures", inner)


def test_fuzz_binaries(tmp_path):
    @examples(120)
    @given(mutated_binary(), st.sampled_from(["inspect", "inspect-json", "init", "launch"]))
    def inner(data, command):
        counts["binaries"] += 1
        path = tmp_path / "k.cubin"
        path.write_bytes(data)
        if command == "launch":
            spec = tmp_path / "s.yaml"
            spec.write_text(SPEC_SEEDS["vector_add.yaml"].replace(
                f"{REPO}/kernels/build/vector_add.sm_90.cubin", str(path)))
            run_cli("launch", "--dry-run", str(spec))
        elif command == "init":
            run_cli("init", str(path))
        else:
            run_cli("inspect", *(["--json"] if command == "inspect-json" else []), str(path))
    fuzz("binaries", inner)


def test_fuzz_triton_entries(tmp_path):
    specs = {e.name: SPEC_SEEDS[f"triton_{e.name.removesuffix('_kernel')}.yaml"]
             for e in TRITON_SEEDS}

    @examples(60)
    @given(st.sampled_from(TRITON_SEEDS),
           st.lists(st.tuples(st.sampled_from(TRITON_KEYS), json_values()), max_size=3),
           st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=6)), max_size=3),
           st.booleans())
    def inner(seed, changes, ttir_edits, drop):
        counts["triton"] += 1
        entry = tmp_path / "entry"
        shutil.rmtree(entry, ignore_errors=True)
        shutil.copytree(seed, entry)
        json_path = entry / f"{seed.name}.json"
        meta = json.loads(json_path.read_text())
        for key, value in changes:
            if drop and key in meta:
                del meta[key]
            else:
                meta[key] = value
        json_path.write_text(json.dumps(meta))
        source = entry / f"{seed.name}.source"
        text = bytearray(source.read_bytes())
        for at, junk in ttir_edits:
            at %= len(text) + 1
            text[at:at] = junk
        source.write_bytes(bytes(text))
        spec = tmp_path / "t.yaml"
        spec.write_text(specs[seed.name].replace(str(seed), str(entry)))
        run_cli("launch", "--dry-run", str(spec))
    fuzz("triton", inner)


def test_fuzz_yaml_structure(tmp_path):
    """Nesting, aliases and scalars no spec has, against the YAML layer itself."""
    nested = st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=5)),
                          lambda c: st.one_of(st.lists(c, max_size=3),
                                              st.dictionaries(st.text(max_size=4), c, max_size=3)),
                          max_leaves=40)

    @examples(60)
    @given(st.one_of(
        nested.map(lambda v: "kernel: " + json.dumps(v)),
        st.integers(1, 12).map(lambda n: "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
            f"a{i}: &a{i} [*{'a' if i == 0 else f'a{i - 1}'}, *{'a' if i == 0 else f'a{i - 1}'}, "
            f"*{'a' if i == 0 else f'a{i - 1}'}]\n" for i in range(n)) + f"signature: {{x: *a{n - 1}}}\n"),
        st.integers(1, 200).map(lambda n: "grid: " + "[" * n + "1" + "]" * n),
        st.text(max_size=200)))
    def inner(text):
        counts["yaml"] += 1
        path = tmp_path / "y.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        run_cli("launch", "--dry-run", str(path))
    fuzz("yaml", inner)


RESULT_KEYS = ["spec", "kernel", "point", "exit_code", "device", "timing", "throughput", "check",
               "compare", "error", "status", "pow2"]
TIMING_KEYS = ["median_us", "min_us", "max_us", "mean_us", "std_us", "p10_us", "p90_us",
               "samples", "samples_us", "sm_clock_mhz"]


def results_documents():
    timing = st.dictionaries(st.sampled_from(TIMING_KEYS), st.one_of(
        st.floats(0, 1e6), st.integers(-5, 10**6), st.lists(st.floats(0.1, 100), max_size=40),
        json_values()), max_size=6)
    result = st.fixed_dictionaries(
        {"kernel": st.sampled_from(["k", "add_kernel"])},
        optional={"timing": timing, "spec": st.sampled_from(["a.yaml", "b.yaml", None]),
                  "point": st.dictionaries(st.sampled_from(["N", "B"]), st.integers(1, 8)),
                  **{key: json_values() for key in RESULT_KEYS if key != "kernel"}})
    return st.one_of(result, st.fixed_dictionaries({"results": st.lists(result, max_size=4)}),
                     json_values())


def test_fuzz_results(tmp_path):
    """`compare` and `--baseline` read result files back: edited ones included."""
    @examples(40)
    @given(results_documents(), results_documents(), st.booleans())
    def inner(base, new, lines):
        counts["results"] += 1
        a, b = tmp_path / "a.json", tmp_path / "b.json"
        a.write_text(json.dumps(base))
        b.write_text("\n".join(json.dumps(r) for r in new.get("results", []))
                     if lines and isinstance(new, dict) else json.dumps(new))
        run_cli("compare", str(a), str(b), codes=COMPARE_CODES)
        run_cli("compare", "--json", str(a), str(b), codes=COMPARE_CODES)
    fuzz("results", inner)


COMPARE_CODES = (0, 2, 5)           # same or faster, refused, slower (or --strict)

# What `cubinrun props --json` writes (one H200), the seed of the props files.
PROPS_SEED = {"devices": [{"ordinal": 0, "name": "NVIDIA H200", "arch": "sm_90",
                           "sm_count": 132, "l2_bytes": 62914560,
                           "shared_per_block_optin": 232448, "warp_size": 32,
                           "memory_bytes": 150754820096}]}
PROPS_KEYS = ["ordinal", "name", "arch", "sm_count", "l2_bytes", "shared_per_block_optin",
              "warp_size", "devices"]
PROPS_VALUES = ["sm_90", "sm_90a", "sm_", "sm_9a", "sm_" + "9" * 5000, "sm_\u0669\u0660",
                "compute_90", 2**64, -1, 0, 1e308, True, None, [], {}]


@st.composite
def props_texts(draw) -> str:
    document = json.loads(json.dumps(PROPS_SEED))
    device = document["devices"][0]
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(PROPS_KEYS))
        value = draw(st.one_of(st.sampled_from(PROPS_VALUES), json_values()))
        target = document if key == "devices" else device
        if draw(st.booleans()) and key in target:
            del target[key]
        else:
            target[key] = value
    shape = draw(st.sampled_from(["file", "device", "list", "bytes"]))
    if shape == "device":
        return json.dumps(device)
    if shape == "list":
        return json.dumps([document])
    text = json.dumps(document)
    if shape == "bytes":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(alphabet='{}[]",:0123456789e-\\', max_size=4)) + text[at:]
    return text


def test_fuzz_props(tmp_path):
    """`--props FILE` (a saved `cubinrun props --json`) for a spec that names
    device values: the values used or one line, never a traceback."""
    spec = tmp_path / "softmax.yaml"
    spec.write_text(SPEC_SEEDS["triton_softmax.yaml"])

    @examples(40)
    @given(props_texts(), st.sampled_from(["0", "1", "99"]))
    def inner(text, device):
        counts["props"] += 1
        props = tmp_path / "props.json"
        props.write_text(text, encoding="utf-8", errors="surrogatepass")
        run_cli("launch", "--dry-run", "--props", str(props), "--device", device, str(spec))
    fuzz("props", inner)

# Number tokens JSON's grammar allows but no float or small integer holds, and
# the constants it does not allow: written into the text as they are.
HOSTILE_NUMBERS = ["9" * 400, "-" + "9" * 400, "1" + "0" * 80, "1e400", "-1e400", "1e-400",
                   "1E+309", "NaN", "Infinity", "-Infinity", "0", "-0", "0.0", "1.5", "2e5"]


@st.composite
def hostile_results(draw) -> str:
    """JSON lines of results whose numbers are huge, beyond a float's range or
    non-finite, whose points mix numbers and strings, and which repeat runs."""
    tokens: list[str] = []

    def number():
        if draw(st.booleans()):
            return draw(st.floats(0.5, 1e4))
        tokens.append(draw(st.sampled_from(HOSTILE_NUMBERS)))
        return f"@@{len(tokens) - 1}@@"

    def point_value():
        return draw(st.one_of(st.integers(1, 4).map(lambda v: 2 ** (10 + v)),
                              st.sampled_from(["naive", "tiled", "1024", ""]),
                              st.just(None).map(lambda _: number())))
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        timing = {key: number() for key in draw(st.lists(st.sampled_from(
            ["median_us", "std_us", "p10_us", "p90_us", "samples", "sm_clock_mhz"]),
            max_size=6, unique=True))}
        if draw(st.booleans()):
            timing["samples_us"] = [number() for _ in range(draw(st.integers(0, 8)))]
        result = {"spec": draw(st.sampled_from(["a.yaml", "b.yaml"])), "kernel": "k",
                  "point": {"N": point_value()}, "timing": timing,
                  "throughput": {"gbps": number()}, "exit_code": draw(st.sampled_from([0, 1, 4]))}
        lines.append(json.dumps(result))
    text = "\n".join(lines) + "\n"
    for at, token in enumerate(tokens):
        text = text.replace(f'"@@{at}@@"', token)
    return text


def test_fuzz_result_numbers(tmp_path):
    """Result files with huge integers, numbers beyond a float's range,
    non-finite constants, mixed point types and repeated runs, through compare
    (--strict too) and plot: one line or a verdict, never a traceback."""
    import importlib.util
    plots = importlib.util.find_spec("matplotlib") is not None

    @examples(40)
    @given(hostile_results(), hostile_results(), st.booleans())
    def inner(base, new, strict):
        counts["result numbers"] += 1
        a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
        a.write_text(base)
        b.write_text(new)
        run_cli("compare", *(["--strict"] if strict else []), str(a), str(b),
                codes=COMPARE_CODES)
        if plots:
            run_cli("plot", str(a), str(b), "-o", str(tmp_path / "p.svg"), "--force",
                    codes=(0, 2))
    fuzz("result numbers", inner)


# --- sweeps: spec axes, --axis and constraints ---------------------------------

AXIS_NUMBERS = ["0", "1", "2", "3", "7", "16", "0.5", "-1", "-0.0", "1_0", "0x10", "1e3", "1e308",
                "1e-308", "9" * 400, "1e999", "nan", "inf", "abc", "add", "a b", "{N}", "", " "]
SWEEP_SEED = SPEC_SEEDS["vector_add.yaml"].replace(
    "  BLOCK: 1024", "  BLOCK: 1024\n  K: \"'add'\"")


def axis_bodies():
    number = st.sampled_from(AXIS_NUMBERS)
    return st.one_of(
        st.lists(number, min_size=0, max_size=5).map(lambda v: "[" + ",".join(v) + "]"),
        st.lists(number, min_size=1, max_size=4).map(lambda v: "[" + ":".join(v) + "]"),
        number,
        st.text(alphabet="[]:,0123456789.e-+ ", max_size=30))


def spec_sweep_nodes():
    number = st.sampled_from(AXIS_NUMBERS)
    return st.one_of(
        st.lists(number, max_size=5).map(lambda v: "[" + ", ".join(json.dumps(x) for x in v) + "]"),
        st.tuples(st.sampled_from(["range", "pow2", "squares", ""]),
                  st.lists(number, max_size=4)).map(lambda t: json.dumps(f"{t[0]}({', '.join(t[1])})")),
        number.map(json.dumps), st.sampled_from(["null", "{}", "[]", "[[1]]", "true", "{a: 1}"]))


def constraint_texts():
    leaf = st.sampled_from(["N", "BLOCK", "K", "Q", "'add'", "'x'", "0", "1", "1024", "2**300",
                            "1e308", "nan"])

    def combine(children):
        binary = st.tuples(children, st.sampled_from(
            ["+", "*", "//", "%", "<", "<=", "==", "!=", "and", "or"]), children).map(" ".join)
        return st.one_of(binary, children.map(lambda c: f"not {c}"),
                         children.map(lambda c: f"({c})"),
                         st.tuples(st.sampled_from(["min", "cdiv", "abs"]), st.lists(
                             children, min_size=1, max_size=2)).map(
                             lambda t: f"{t[0]}({', '.join(t[1])})"))
    return st.one_of(st.recursive(leaf, combine, max_leaves=12),
                     st.text(alphabet="NBK<=>!'() andort01", max_size=30))


def test_fuzz_sweeps(tmp_path):
    """Spec sweeps, --axis (nvbench's grammar) and constraints: every point's
    arithmetic exact and bounded before expansion, one line per failed point."""
    @examples(60)
    @given(st.sampled_from(["N", "BLOCK", "K", "Q"]), spec_sweep_nodes(),
           st.lists(st.tuples(st.sampled_from(["N", "BLOCK", "K", "Q", "N[pow2]", "2N"]),
                              axis_bodies()), max_size=2),
           st.lists(constraint_texts(), max_size=2), st.booleans())
    def inner(var, node, axes, constraints, in_spec):
        counts["sweeps"] += 1
        text = SWEEP_SEED + f"sweep:\n  {var}: {node}\n"
        if in_spec and constraints:
            text += "constraints:\n" + "".join(f"  - {json.dumps(c)}\n" for c in constraints)
        path = tmp_path / "sweep.yaml"
        path.write_text(text)
        args = ["launch", "--dry-run", "--json", str(path)]
        for name, body in axes:
            args += ["--axis", f"{name}={body}"]
        if not in_spec:
            for constraint in constraints:
                args += ["--constraint", constraint]
        run_cli(*args, many=True)
    fuzz("sweeps", inner)


# (No NUL: a command line cannot hold one.)
# (FIFOs are POSIX; symlinks need a privilege on Windows.)
OUTPUT_PLACES = ["missing", "file", "folder", "empty name", "missing folder"] + (
    [] if os.name == "nt" else ["FIFO", "dangling link", "link to a file", "link to a FIFO",
                                "link to a folder"])
OUTPUT_COMMANDS = [["gen", "--signature", "*fp32,i32"], ["schema"],
                   ["init", str(REPO / "kernels" / "build" / "vector_add.sm_90.cubin")]]


def _place_output(folder: Path, place: str, victim: Path) -> str:
    """A path for -o of the kind `place` names; `victim` is what links point at."""
    target = folder / "out"
    if place == "file":
        target.write_text("old")
    elif place == "folder":
        target.mkdir()
    elif place == "FIFO":
        os.mkfifo(target)
    elif place == "dangling link":
        target.symlink_to(folder / "nowhere")
    elif place == "link to a file":
        target.symlink_to(victim)
    elif place == "link to a FIFO":
        os.mkfifo(folder / "fifo")
        target.symlink_to(folder / "fifo")
    elif place == "link to a folder":
        target.symlink_to(victim.parent)
    elif place == "empty name":
        return ""
    elif place == "missing folder":
        return str(folder / "no" / "out")
    return str(target)


def test_fuzz_outputs(tmp_path):
    """-o at every kind of place, with and without --force: exit 0 or 2 and one
    line, never a hang, and nothing reached through a link is written."""
    @examples(40)
    @given(st.sampled_from(OUTPUT_PLACES), st.sampled_from(OUTPUT_COMMANDS), st.booleans())
    def inner(place, command, force):
        counts["outputs"] += 1
        with tempfile.TemporaryDirectory() as tmp:
            folder, elsewhere = Path(tmp) / "here", Path(tmp) / "elsewhere"
            folder.mkdir()
            elsewhere.mkdir()
            victim = elsewhere / "victim"
            victim.write_text("precious")
            target = _place_output(folder, place, victim)
            outcome = run_cli(*command, "-o", target, *(["--force"] if force else []))
            assert outcome.code in (0, 2), (place, command, force, outcome.stderr)
            assert victim.read_text() == "precious" and os.listdir(elsewhere) == ["victim"]
            if outcome.code == 0:
                assert Path(target).is_file() and not Path(target).is_symlink()
    fuzz("outputs", inner)


TUNE_FLAGS = ["--min-samples", "--warmup", "--rep", "--max-evals", "--time-limit", "--top-k",
              "--rounds", "--seed", "--objective", "--strategy"]


def test_fuzz_tune_flags(tmp_path):
    """tune's flags with hostile values, on a replayed landscape: exit 0 or 2,
    one line, never a traceback or a hang."""
    pytest.importorskip("optuna", reason="cubinrun tune needs the tune extra (Optuna)")
    from support import tunelandscape
    spec, results = tunelandscape.write(tmp_path, "smooth")
    values = st.one_of(st.integers(-2 ** 70, 2 ** 70).map(str),
                       st.sampled_from(["0", "-1", "1e400", "nan", "inf", "-inf", "1e-300",
                                        "10001", "", "3%", "x", "1_0", " 5", "0x10"]),
                       st.text(max_size=12))

    @examples(25)
    @given(st.sampled_from(TUNE_FLAGS), values)
    def inner(flag, value):
        counts["tune flags"] += 1
        with tempfile.TemporaryDirectory() as tmp:
            run_cli("tune", str(spec), "--replay", str(results), "--strategy", "random",
                    "--max-evals", "3", "--storage", f"sqlite:///{tmp}/s.sqlite",
                    flag, value, codes=(0, 2))
    fuzz("tune flags", inner)
