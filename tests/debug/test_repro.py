"""`cubinrun repro` on the CPU: the generated C builds warning-free for every
sample spec, runs against the fake libcuda in its own process, and passes the
kernel the same parameter bytes, grid, block, shared memory and launch
attributes as cubinrun's own launch (recorded by the same fake)."""
from __future__ import annotations

import math
import os
import random
import struct
import sys

import numpy as np
import pytest
from fakecuda import recorded_allocations, recorded_launches
from support.cli import run as run_cli
from support.halfbits import bf16_bits, fp16_bits
from support.repo import REPO
from support.repro import build, run_repro, write

from cubinrun.plan.packing import round_to_16_bits
from cubinrun.signature import leaf_size
from cubinrun.specfile import load_spec, parse_overrides

# The reproducer is a POSIX C program: run.sh builds it with cc -ldl and it
# opens the driver with dlopen. Windows reproducers are not written yet.
pytestmark = pytest.mark.skipif(sys.platform == "win32",
                                reason="POSIX only: repro.c uses dlopen and run.sh")

CONFIGS = REPO / "configs"
# every good sample but source: kernels (those need --arch, tested once below)
SAMPLES = sorted(p.name for p in CONFIGS.glob("*.yaml") if "source" not in p.name)


def interesting_doubles():
    rng = random.Random(12)
    values = [0.0, -0.0, 1.0, -2.5, 65504.0, 65519.99, 2.0 ** -24, 2.0 ** -25, 2.0 ** -133,
              2.0 ** -134, 3.3895313892515355e38, 1e-300, float("inf"), float("-inf")]
    values += [1 + k * 2.0 ** -11 for k in range(1, 8)]           # fp16 ties and neighbours
    values += [1 + k * 2.0 ** -8 for k in range(1, 8)]            # bf16 ties and neighbours
    values += [rng.uniform(-1e4, 1e4) for _ in range(300)]
    values += [math.ldexp(rng.random(), rng.randint(-140, 120)) for _ in range(300)]
    return values


def test_16_bit_floats_in_the_reproducer_round_as_the_launcher_does():
    for d in interesting_doubles():
        bf16 = bf16_bits(d)
        if bf16 >= 0:
            assert round_to_16_bits(d, 7, 127) == bf16, d
        if abs(d) < 65520 or math.isinf(d):
            assert round_to_16_bits(d, 10, 15) == fp16_bits(d), d
    assert round_to_16_bits(float("nan"), 10, 15) == 0x7E00
    assert round_to_16_bits(-float("nan"), 7, 127) == 0xFFC0
    with pytest.raises(OverflowError):
        round_to_16_bits(65520.0, 10, 15)


def param_sizes(prepared) -> list[int]:
    plan = prepared.plan
    return [leaf_size(s.leaf.type) for s in plan.slots] + [8] * plan.num_scratch


def in_allocations(value: bytes, allocations: list[tuple[int, int]]):
    """A pointer parameter as (which allocation, offset); other bytes as they are."""
    if len(value) == 8:
        address = int.from_bytes(value, "little")
        for index, (base, size) in enumerate(allocations):
            if base <= address < base + max(size, 1):
                return index, address - base
    return value


@pytest.mark.parametrize("config", SAMPLES)
def test_every_sample_s_reproducer_builds_warning_free(config, tmp_path):
    write(CONFIGS / config, tmp_path)
    build(tmp_path, "-fsyntax-only")


def test_a_source_kernel_s_reproducer_carries_the_compiled_cubin(tmp_path):
    prepared = write(CONFIGS / "vector_add_source.yaml", tmp_path, arch="sm_90")
    assert (tmp_path / "kernel.cubin").read_bytes() == prepared.cubin
    build(tmp_path, "-fsyntax-only")


@pytest.mark.parametrize("config, overrides", [
    ("vector_add.yaml", ["N=4096"]),
    ("scalars.yaml", []),               # every scalar type, pointers interleaved
    ("cluster_launch.yaml", []),        # num_ctas 2: cluster and SPREAD attributes
    ("cluster_dims.yaml", []),
    ("scratch.yaml", []),               # Triton-style trailing scratch pointers
    ("smem_big.yaml", []),
    ("structs.yaml", ["N=4096"]),      # structs by value, holding two buffers' addresses
    ("empty0.yaml", []),                # no parameters at all
])
def test_the_reproducer_passes_the_same_bytes_as_cubinrun(config, overrides, device,
                                                          fake_libcuda, tmp_path, capsys):
    same_bytes(CONFIGS / config, overrides, device, fake_libcuda, tmp_path, capsys)


def test_a_buffer_offset_is_kept_in_the_reproducer(device, fake_libcuda, tmp_path, capsys):
    spec = tmp_path / "offset.yaml"
    spec.write_text((CONFIGS / "vector_add.yaml").read_text()
                    .replace("../kernels", str(REPO / "kernels"))
                    .replace("x: {shape: [N], init: random}",
                             "x: {shape: [N], init: random, offset: 4}"))
    x = same_bytes(spec, ["N=1024"], device, fake_libcuda, tmp_path / "repro", capsys)[0]
    assert x[1] == 16                   # 4 fp32 past its allocation's start, in both


def same_bytes(spec_path, overrides, device, fake_libcuda, folder, capsys):
    """Launch with cubinrun and with the reproducer against the fake; their first
    launches must match (pointers as allocation and offset). Returns the repro's
    parameters as compared."""
    prepared = write(spec_path, folder, *overrides)
    sizes = param_sizes(prepared)
    fake_libcuda.set_param_sizes(sizes)
    ours = []
    alloc = device.cuMemAlloc
    device.cuMemAlloc = lambda n: ours.append((alloc(n), n)) or ours[-1][0]
    run_cli(capsys, "launch", "--json", spec_path, "--no-bench", "--no-guard",
            *[a for o in overrides for a in ("--set", o)])
    [mine] = fake_libcuda.launches()[:1]

    build(folder)
    done = run_repro(folder, fake_libcuda.path, sizes)
    assert done.returncode in (0, 1), done.stderr       # no kernel runs: a check may fail
    theirs = recorded_launches(folder / "launches.bin", sizes)
    assert len(theirs) == 3                              # checked, then REPRO_REPEATS
    repro = theirs[0]
    allocations = recorded_allocations(folder / "allocations.txt")
    assert (repro.grid, repro.block, repro.shared) == (mine.grid, mine.block, mine.shared)
    assert repro.attrs == mine.attrs
    assert len(repro.params) == len(sizes)
    compared = comparable(prepared, repro.params, allocations)
    assert compared == comparable(prepared, mine.params, ours)
    return compared


def comparable(prepared, params: list[bytes], allocations):
    """Parameters with every device address as (allocation, offset), also those
    inside a struct passed by value."""
    slots = prepared.plan.slots
    out = []
    for k, value in enumerate(params):
        if k < len(slots) and slots[k].kind == "struct":
            data, pointers = bytearray(value), []
            for m in slots[k].members:
                if m.kind == "buffer":
                    pointers.append(in_allocations(bytes(data[m.offset:m.offset + 8]),
                                                   allocations))
                    data[m.offset:m.offset + 8] = bytes(8)
            out.append((bytes(data), pointers))
        else:
            out.append(in_allocations(value, allocations))
    return out


@pytest.fixture
def passing_spec(tmp_path):
    text = (CONFIGS / "vector_add.yaml").read_text()
    path = tmp_path / "va.yaml"
    path.write_text(text.replace("expect: x + y", "expect: 0 * x")
                    .replace("../kernels", str(REPO / "kernels")))
    return path


def test_pass_fail_and_the_outputs(fake_libcuda, passing_spec, tmp_path):
    folder = tmp_path / "pass"
    write(passing_spec, folder, "N=1000")
    build(folder)
    done = run_repro(folder, fake_libcuda.path, [8, 8, 8, 4])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "out: pass  0 / 1000 mismatches" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("PASS add_kernel: first launch")
    assert (folder / "outputs" / "out.bin").read_bytes() == bytes(4000)

    folder = tmp_path / "fail"
    write(CONFIGS / "vector_add.yaml", folder, "N=1000")
    build(folder)
    done = run_repro(folder, fake_libcuda.path, [8, 8, 8, 4])
    assert done.returncode == 1 and "out: FAIL  1000 / 1000 mismatches" in done.stdout
    x = np.fromfile(folder / "inputs" / "00_x.bin", dtype=np.float32)
    y = np.fromfile(folder / "inputs" / "01_y.bin", dtype=np.float32)
    assert f"out[0]: got 0, expected {float(x[0]) + float(y[0]):.9g}" in done.stdout


@pytest.mark.parametrize("fill, code", [("-0.0", 0), ("0.0", 1)])
def test_exact_checks_compare_bits(fake_libcuda, tmp_path, fill, code):
    # no kernel runs, so out keeps its fill: -0.0 meets the exact -0.0, 0.0 does not
    spec = tmp_path / "exact.yaml"
    spec.write_text((CONFIGS / "vector_add.yaml").read_text()
                    .replace("../kernels", str(REPO / "kernels"))
                    .replace("out: {shape: [N], init: zeros}",
                             f"out: {{shape: [N], init: {{fill: {fill}}}}}")
                    .replace("expect: x + y, rtol: 1e-6", "expect: -abs(0 * x), exact: true"))
    folder = tmp_path / "repro"
    write(spec, folder, "N=64")
    expected = (folder / "expected" / "out.bin").read_bytes()
    assert expected == struct.pack("<f", -0.0) * 64        # bits: the dtype's own bytes
    build(folder)
    done = run_repro(folder, fake_libcuda.path, [8, 8, 8, 4])
    assert done.returncode == code, done.stdout


def test_a_damaged_input_is_exit_2(fake_libcuda, passing_spec, tmp_path):
    write(passing_spec, tmp_path, "N=64")
    build(tmp_path)
    (tmp_path / "inputs" / "01_y.bin").write_bytes(b"short")
    done = run_repro(tmp_path, fake_libcuda.path, [8, 8, 8, 4])
    assert done.returncode == 2
    assert done.stderr.strip() == "error: inputs/01_y.bin does not hold 256 bytes"


def test_a_cuda_error_is_exit_4_with_its_name(fake_libcuda, passing_spec, tmp_path):
    write(passing_spec, tmp_path, "N=64")
    build(tmp_path)
    (tmp_path / "kernel.cubin").write_bytes(b"\0" * (tmp_path / "kernel.cubin").stat().st_size)
    done = run_repro(tmp_path, fake_libcuda.path, [8, 8, 8, 4])
    assert done.returncode == 4
    assert done.stderr.strip() == ("error: cuModuleLoadData(&module, image) failed: "
                                   "CUDA_ERROR_INVALID_IMAGE (200)")


def test_the_command_line(tmp_path, capsys):
    code, out, err = run_cli(capsys, "repro", CONFIGS / "vector_add.yaml", "-o", tmp_path / "r",
                             "--set", "N=256")
    assert code == 0 and out == ""                      # said on stderr, as every -o says it
    assert "wrote" in err and "3 input(s) (3.00 KiB)" in err and "run.sh" in err
    assert os.access(tmp_path / "r" / "run.sh", os.X_OK)
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == \
        ["expected", "inputs", "kernel.cubin", "outputs", "repro.c", "run.sh"]


def test_inputs_and_expected_outputs_are_written_block_by_block(monkeypatch, tmp_path):
    from cubinrun.hostdata import check, values as hostdata
    from cubinrun.gpu.buffers import make_host_arrays
    from cubinrun.plan.make import make_plan
    monkeypatch.setattr(hostdata, "CHUNK", 1000)
    monkeypatch.setattr(check, "CHUNK", 1000)
    n = 50_500                                          # 51 blocks, the last one short
    with monkeypatch.context() as m:                    # no input is ever made whole
        m.setattr(hostdata.InputValues, "whole", lambda self: pytest.fail("made whole"))
        write(CONFIGS / "vector_add.yaml", tmp_path, f"N={n}")
    spec = load_spec(CONFIGS / "vector_add.yaml", parse_overrides([f"N={n}"]))
    x, y, out = make_host_arrays(make_plan(spec))
    for name, array in (("00_x", x), ("01_y", y), ("02_out", out)):
        assert (tmp_path / "inputs" / f"{name}.bin").read_bytes() == array.tobytes()
    expected = (tmp_path / "expected" / "out.bin").read_bytes()
    assert expected == (x.astype(np.float64) + y).tobytes()     # "close": float64 values
