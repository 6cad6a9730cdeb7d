"""The whole `cubinrun launch` path on the CPU: every Python driver call goes
through `driver.call`, so one table fakes them (device memory is host memory);
the launcher's cuLaunchKernelEx is the fake libcuda, which records launches.
No kernel runs, so an output keeps its input: checks that expect that pass,
others fail with exit code 1, and everything around the GPU is exercised."""
from __future__ import annotations

import json
import os
import re
import time

import numpy as np
import pytest
from fakecuda.device import FakeDevice

from cubinrun.gpu import capacity
from cubinrun.gpu import driver, transfer
from cubinrun.gpu.buffers import make_host_arrays
from cubinrun.errors import CudaError
from cubinrun.plan.make import make_plan
from cubinrun.specfile import load_spec, parse_overrides
from support.cli import run as run_cli
from support.repo import CONFIGS, REPO
from support.fake_vector_add import BIG_N, vector_add, vector_add_copy  # noqa: F401 (vector_add: the fixture)

SUCCESS = 0


def test_launch_json_report_and_failed_check_exit_1(device, fake_libcuda, capsys):
    code, out, err = run_cli(capsys, "launch", "--json", CONFIGS / "vector_add.yaml",
                             "--set", "N=4096", "--rep", "1", "--warmup", "1")
    report = json.loads(out)
    assert code == 1 and err == ""                      # out stays zero: x + y fails
    assert report["kernel"] == "add_kernel" and report["device"]["name"] == "Fake H200"
    assert report["grid"] == [4, 1, 1] and report["block"] == [128, 1, 1]
    check = report["check"]["outputs"]["out"]
    assert report["check"]["passed"] is False and check["mismatches"] == 4096
    # the fake's pairs read 2 us + 3 us per launch: the calibration finds the
    # 2 us on its empty kernel and every sample comes back as the kernel's 3 us
    assert report["timing"]["event_offset_us"] == pytest.approx(FakeDevice.EVENT_OFFSET_US)
    assert report["timing"]["median_us"] == pytest.approx(FakeDevice.KERNEL_US)
    assert report["timing"]["max_us"] == pytest.approx(FakeDevice.KERNEL_US)
    assert report["timing"]["samples"] >= 10 and report["timing"]["l2"] == "cold"
    assert report["throughput"]["gbps"] == pytest.approx(12 * 4096 / 3e-6 / 1e9)
    assert report["throughput"]["tflops"] is None
    first = fake_libcuda.launches()[0]
    assert first.grid == (4, 1, 1) and first.block == (128, 1, 1) and first.stream == 0x5
    assert int.from_bytes(first.params[3][:4], "little") == 4096
    assert not device.memory                            # every allocation was freed


def test_raw_events_keep_the_event_offset(device, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", "--raw-events", "--l2", "hot",
                           CONFIGS / "vector_add.yaml", "--rep", "1", "--warmup", "1")
    timing = json.loads(out)["timing"]
    assert timing["event_offset_us"] is None and timing["l2"] == "hot"
    assert timing["median_us"] == pytest.approx(FakeDevice.EVENT_OFFSET_US + FakeDevice.KERNEL_US)


def test_a_cubin_for_another_arch_is_refused_after_the_early_preparation(device, monkeypatch,
                                                                          capsys):
    # the binary is read while the driver initialises; the arch check waits for the device
    monkeypatch.setitem(FakeDevice.ATTRIBUTES, "COMPUTE_CAPABILITY_MAJOR", 8)
    code, _, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--no-bench")
    assert code == 2
    assert err.strip().endswith("kernel.cubin: the cubin is for sm_90, which cannot run on "
                                "Fake H200 (sm_80)")
    assert "cuModuleLoadData" not in device.calls


def test_a_spec_error_waits_for_the_driver_to_finish_initialising(device, monkeypatch,
                                                                    tmp_path, capsys):
    # CUDA starts on a thread before the spec is read; exiting while cuInit runs
    # could meet libcuda's exit handlers, so the error path waits for it too
    finished = []

    def slow_init(flags):
        time.sleep(0.2)
        finished.append(True)
    monkeypatch.setattr(device, "cuInit", slow_init)
    spec = tmp_path / "bad.yaml"
    text = (CONFIGS / "vector_add.yaml").read_text().replace("../kernels", str(REPO / "kernels"))
    spec.write_text(text.replace("add_kernel", "no_such"))
    code, _, err = run_cli(capsys, "launch", spec)
    assert code == 2 and "has no kernel 'no_such'" in err
    assert finished == [True]


def test_a_device_that_is_not_there_is_a_usage_error(device, capsys):
    code, _, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--device", "3")
    assert code == 2 and "--device 3: there is 1 device (0..0)" in err


def test_check_expect_names_tuple_elements(device, capsys):
    path = CONFIGS / "vector_add_tuple.yaml"
    code, out, _ = run_cli(capsys, "launch", "--json", "--no-bench", path, "--set", "N=4096")
    assert code == 1                                    # no kernel runs here: out stays zero
    x0, x1, _ = make_host_arrays(make_plan(load_spec(path, parse_overrides(["N=4096"]))))
    expected = np.abs(x0.astype(np.float64) + x1).max()  # so the reference was xy[0] + xy[1]
    assert json.loads(out)["check"]["outputs"]["out"]["max_abs_err"] == pytest.approx(expected)


def test_the_human_report(device, capsys):
    code, out, _ = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--set", "N=1024",
                           "--no-bench")
    assert code == 1
    assert "add_kernel on Fake H200 (sm_90)" in out and "FAIL" in out
    assert "out[0]: got 0.0, expected" in out


def test_the_human_report_says_what_was_subtracted(device, capsys):
    _, out, _ = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--set", "N=1024",
                        "--rep", "1", "--warmup", "1")
    assert "time  median 3.00 us" in out and "L2 cold" in out
    assert "event pair offset 2.00 us subtracted" in out


def test_a_check_the_untouched_output_meets_passes(device, tmp_path, capsys):
    spec = (CONFIGS / "vector_add.yaml").read_text().replace("expect: x + y", "expect: 0 * x")
    path = tmp_path / "va.yaml"
    path.write_text(spec.replace("../kernels", str(REPO / "kernels")))
    code, out, _ = run_cli(capsys, "launch", "--json", path, "--set", "N=256", "--no-bench")
    assert code == 0 and json.loads(out)["check"]["passed"] is True


def test_big_shared_memory_is_opted_in(device, fake_libcuda, capsys):
    fake_libcuda.set_param_sizes([8, 8, 4, 4])
    code, _, _ = run_cli(capsys, "launch", "--json", CONFIGS / "smem_big.yaml", "--no-bench")
    assert device.function_attributes["MAX_DYNAMIC_SHARED_SIZE_BYTES"] == 204800
    assert code in (0, 1)


def test_shared_memory_over_the_limit_names_the_field(device, capsys):
    code, _, err = run_cli(capsys, "launch", CONFIGS / "smem_big.yaml", "--set", "CHUNK=60000")
    assert code == 2
    assert re.search(r"smem_big.yaml:\d+: launch.shared: 240000 bytes", err.strip().splitlines()[-1])


def test_scratch_is_allocated_per_cta_and_passed_last(device, fake_libcuda, capsys):
    fake_libcuda.set_param_sizes([8, 8, 4, 8, 8])
    code, out, _ = run_cli(capsys, "launch", "--json", CONFIGS / "scratch.yaml", "--no-bench")
    launch = fake_libcuda.launches()[0]
    global_scratch, profile_scratch = (int.from_bytes(p, "little") for p in launch.params[3:5])
    assert global_scratch % 128 == 0 and profile_scratch % 8 == 0
    assert global_scratch != 0 and profile_scratch != 0


def test_empty_grid_launches_nothing(device, fake_libcuda, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", CONFIGS / "vector_add.yaml",
                           "--set", "N=0")
    report = json.loads(out)
    assert report["launched"] is False and report["timing"] is None
    assert fake_libcuda.launch_count == 0 and code == 0


def test_the_checks_references_are_made_on_a_thread_before_the_launch(device, fake_libcuda,
                                                                       monkeypatch, capsys):
    """A whole-array reference (a matmul's) is made while the kernel loads, the
    buffers fill and the kernel runs (gpu/outputs.checkers_ahead)."""
    import threading
    from cubinrun.gpu import outputs
    made = []
    real = outputs.make_checkers

    def recording(spec, inputs, names=None):
        made.append((threading.current_thread().name, fake_libcuda.launch_count))
        return real(spec, inputs, names)
    monkeypatch.setattr(outputs, "make_checkers", recording)
    code, out, _ = run_cli(capsys, "launch", "--json", "--no-bench", CONFIGS / "vector_add.yaml",
                           "--set", "N=4096")
    assert code == 1 and json.loads(out)["check"]["outputs"]["out"]["mismatches"] > 0
    assert made == [("cubinrun-references", 0)]


def test_an_error_in_a_reference_made_ahead_names_the_spec_and_line(device, fake_libcuda,
                                                                     monkeypatch, capsys):
    import threading
    from cubinrun.errors import SpecError
    from cubinrun.gpu import outputs

    def failing(spec, inputs, names=None):
        raise SpecError(f"made on {threading.current_thread().name}", field="check.out")
    monkeypatch.setattr(outputs, "make_checkers", failing)
    code, _, err = run_cli(capsys, "launch", "--no-bench", CONFIGS / "vector_add.yaml",
                           "--set", "N=4096")
    line = err.strip().splitlines()[-1]
    assert code == 2 and fake_libcuda.launch_count == 1
    assert re.search(r"vector_add\.yaml:\d+: check\.out: made on cubinrun-references$", line), err


def test_a_launch_error_names_the_kernel_and_the_result(device, fake_libcuda, capsys):
    fake_libcuda.fail_launch(719)                       # CUDA_ERROR_LAUNCH_FAILED
    code, _, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--no-bench")
    assert code == 4
    # the description after the name comes from the driver, absent on this machine
    assert err.strip().startswith("error: cuLaunchKernelEx failed (kernel 'add_kernel'): "
                                  "CUDA_ERROR_LAUNCH_FAILED")


def test_props_table_from_the_fake_device(device, capsys):
    device.cuDeviceTotalMem = lambda handle: 143 << 30
    device.cuDeviceGetPCIBusId = lambda length, handle: b"0000:19:00.0\0"
    device.cuDriverGetVersion = lambda: 13000
    code, out, _ = run_cli(capsys, "props", "--json")
    info = json.loads(out)["devices"][0]
    assert code == 0 and info["name"] == "Fake H200" and info["arch"] == "sm_90"
    assert info["peak_bandwidth_gbps"] == pytest.approx(2 * 3.201e9 * 6144 / 8 / 1e9)
    assert info["cuda_driver_version"] == "13.0"
    code, out, _ = run_cli(capsys, "props")
    assert "peak memory bandwidth" in out and "4,917 GB/s" in out


def test_without_a_driver_launch_and_props_end_with_exit_4(capsys, monkeypatch):
    def no_driver(name, *args, context=""):
        raise CudaError(f"no NVIDIA driver found: {name} could not load libcuda.so.1", call=name)
    monkeypatch.setattr(driver, "call", no_driver)
    for args in (["launch", CONFIGS / "vector_add.yaml"], ["props"]):
        code, out, err = run_cli(capsys, *args)
        assert code == 4 and out == ""
        assert err.count("\n") == 1 and err.startswith("error: no NVIDIA driver found")


def test_a_launch_takes_device_values_from_its_device(device, fake_libcuda, capsys, tmp_path):
    text = (CONFIGS / "vector_add.yaml").read_text().replace("../kernels/", f"{REPO}/kernels/")
    spec = tmp_path / "persistent.yaml"
    spec.write_text(text.replace("grid: [cdiv(N, BLOCK)]", "grid: [min(sm_count, cdiv(N, BLOCK))]"))
    code, out, err = run_cli(capsys, "launch", "--json", spec, "--no-bench")
    assert json.loads(out)["grid"] == [132, 1, 1]           # the fake device's 132 SMs
    assert fake_libcuda.launches()[0].grid == (132, 1, 1)


# ---------------------------------------------------------------- data at scale
# Inputs made into pinned staging slots and copied, outputs checked and saved
# slot by slot, constant buffers set by a memset, refusals before anything is
# allocated, and the stage times reported. The fake's "kernel" runs when it is
# waited for: out = x + y (the vector_add fixture, tests/support/fake_vector_add.py).


def test_the_check_passes_through_many_slots_and_reports_its_stages(vector_add, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", "--no-bench", CONFIGS / "vector_add.yaml",
                           "--set", f"N={BIG_N}")
    report = json.loads(out)
    assert code == 0 and report["check"]["outputs"]["out"]["count"] == BIG_N
    x, y, _ = make_host_arrays(make_plan(load_spec(CONFIGS / "vector_add.yaml",
                                                   parse_overrides([f"N={BIG_N}"]))))
    rounding = np.abs((x + y).astype(np.float64) - (x.astype(np.float64) + y)).max()
    assert report["check"]["outputs"]["out"]["max_abs_err"] == rounding
    assert set(report["stages_s"]) == {"init", "upload", "launch", "download", "check"}
    assert all(seconds >= 0 for seconds in report["stages_s"].values())
    calls = vector_add.calls
    # x and y copied in slots of 4096 floats, and two guard bands per buffer on the same
    # stream; out (zeros) set by one memset of 4-byte zeros
    assert calls.count("cuMemcpyHtoDAsync") == 2 * -(-BIG_N // 4096) + 2 * 3
    assert calls.count("cuMemsetD32Async") == 1 and "cuMemcpyHtoD" not in calls
    assert calls.count("cuMemcpyDtoHAsync") == -(-BIG_N // 4000)     # whole blocks per slot
    assert not vector_add.memory                                   # pinned slots freed too


def test_later_runs_of_a_session_copy_the_inputs_kept_on_the_device(vector_add, monkeypatch,
                                                                   capsys):
    """A sweep's third point gets x and y from the device copies the second took
    after its upload (gpu/input_copies.py; a session keeps none for its first
    run): no slot is made or sent again, and the copies hold the inputs as made
    even though run 2's kernel overwrote x."""
    from cubinrun.runs import executor
    monkeypatch.setattr(executor, "ProcessExecutor",
                        lambda options, *a, **k: executor.InlineExecutor(options))

    def play(run, x, y, out):
        if run == 2:
            x[:] = 0                        # run 2's kernel writes over its input
    vector_add.play = play
    code, out, err = run_cli(capsys, "launch", "--json", "--no-bench", CONFIGS / "vector_add.yaml",
                             "--set", f"N={BIG_N}", "--axis", "BLOCK=[256, 512, 1024]")
    results = json.loads(out)["results"]
    assert code == 0, err
    assert [r["check"]["passed"] for r in results] == [True, True, True]
    calls = vector_add.calls
    slots = 2 * -(-BIG_N // 4096)       # x and y: made and sent by runs 1 and 2 (which keeps them)
    assert calls.count("cuMemcpyHtoDAsync") == 2 * slots + 3 * 2 * 3   # + guard bands, 3 runs
    assert calls.count("cuMemcpyDtoDAsync") == 2 + 2                    # kept, then restored


def test_first_mismatches_come_back_in_flat_order(vector_add, capsys):
    vector_add.wrong.update({BIG_N - 1: 5.0, 17: -1.0, 4095: 2.0, 4096: 3.0})
    code, out, _ = run_cli(capsys, "launch", "--json", "--no-bench", CONFIGS / "vector_add.yaml",
                           "--set", f"N={BIG_N}")
    result = json.loads(out)["check"]["outputs"]["out"]
    assert code == 1 and result["mismatches"] == 4
    assert [m[0] for m in result["first_mismatches"]] == [[17], [4095], [4096], [BIG_N - 1]]
    x, y, _ = make_host_arrays(make_plan(load_spec(CONFIGS / "vector_add.yaml",
                                                   parse_overrides([f"N={BIG_N}"]))))
    assert result["first_mismatches"][0][1:] == [-1.0, float(x[17]) + float(y[17])]


def test_saved_outputs_are_what_np_save_writes(vector_add, tmp_path, capsys):
    path = vector_add_copy(tmp_path)
    text = path.read_text().replace("out: {shape: [N], init: zeros}",
                                    f"out: {{shape: [N], init: zeros, save: {tmp_path}/out.npy}}")
    path.write_text(text)
    code, _, _ = run_cli(capsys, "launch", "--no-bench", path, "--set", f"N={BIG_N}")
    x, y, _ = make_host_arrays(make_plan(load_spec(path, parse_overrides([f"N={BIG_N}"]))))
    saved = tmp_path / "out.npy"
    assert code == 0
    expected = tmp_path / "expected.npy"
    np.save(expected, x + y)
    assert saved.read_bytes() == expected.read_bytes()


def test_save_replaces_a_link_and_leaves_its_target(vector_add, tmp_path, capsys):
    """`save:` never writes through a link planted at its path (issue 24)."""
    if os.name == "nt":
        pytest.skip("POSIX only: symlinks need a privilege on Windows")
    victim = tmp_path / "victim"
    victim.write_text("not cubinrun's")
    (tmp_path / "out.npy").symlink_to(victim)
    path = vector_add_copy(tmp_path)
    path.write_text(path.read_text().replace(
        "out: {shape: [N], init: zeros}", f"out: {{shape: [N], init: zeros, save: {tmp_path}/out.npy}}"))
    code, _, err = run_cli(capsys, "launch", "--no-bench", path, "--set", "N=4096")
    assert code == 0, err
    assert victim.read_text() == "not cubinrun's" and not (tmp_path / "out.npy").is_symlink()
    assert np.load(tmp_path / "out.npy").shape == (4096,)


def test_a_spec_that_cannot_fit_the_host_is_refused_first(device, monkeypatch, tmp_path, capsys):
    # random integers are drawn in one call and kept whole: 4e8 bytes of them
    text = vector_add_copy(tmp_path).read_text().replace("init: zeros", "init: {random: uniform}")
    spec = tmp_path / "ints.yaml"
    spec.write_text(text.replace('out: "*fp32"', 'out: "*i32"'))
    monkeypatch.setattr(capacity, "available_host_memory", lambda: 100 << 20)
    code, _, err = run_cli(capsys, "launch", spec, "--set", "N=100000000", "--no-bench")
    assert code == 2
    assert "args: the buffers need" in err and "out 381.47 MiB kept whole" in err
    assert "and 100.00 MiB is available" in err
    assert "cuMemAlloc" not in device.calls


@pytest.mark.parametrize("free, total, code, words", [
    (1 << 20, 141 << 30, 4, "of Fake H200's 141.00 GiB is free"),
    (1 << 20, 8 << 20, 2, "and Fake H200 has 8.00 MiB"),
])
def test_a_spec_that_cannot_fit_the_device_is_refused_before_allocating(
        device, monkeypatch, capsys, free, total, code, words):
    device.free_memory = free
    monkeypatch.setattr(type(device), "TOTAL_MEMORY", total)
    exit_code, _, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--no-bench")
    # 3 buffers of 4 MiB, each with its two guard bands rounded up to 2 MiB pages
    assert exit_code == code and "the buffers and scratch need 18.00 MiB" in err
    assert words in err and err.count("\n") == 1
    assert "cuMemAlloc" not in device.calls


def test_repeat_makes_the_inputs_again_and_compares_slot_by_slot(vector_add, monkeypatch,
                                                                  capsys):
    def play(run, x, y, out):
        x[0] += 1                       # the same in every run only if x is uploaded again
        if run == 3:
            out[[17, BIG_N - 1]] = 5.0  # two slots apart
    vector_add.play = play
    copies = []                         # synchronous copies to the host, in bytes
    copy = vector_add.cuMemcpyDtoH
    monkeypatch.setattr(vector_add, "cuMemcpyDtoH",
                        lambda dst, src, n: copies.append(n) or copy(dst, src, n))
    code, out, _ = run_cli(capsys, "launch", "--json", "--no-bench", CONFIGS / "vector_add.yaml",
                           "--set", f"N={BIG_N}", "--repeat", "4")
    report = json.loads(out)
    assert code == 1 and report["check"]["outputs"]["out"]["passed"] is True
    x, y, _ = make_host_arrays(make_plan(load_spec(CONFIGS / "vector_add.yaml",
                                                   parse_overrides([f"N={BIG_N}"]))))
    assert report["repeat"]["disagreements"] == [{
        "buffer": "out", "runs_differing": 1, "first_run": 3, "first_index": [17],
        "elements_differing": 2, "run1_value": float(x[17] + y[17]), "value": 5.0}]
    # x and y made again into the slots before every run (13 slots each); guard bands once
    assert vector_add.calls.count("cuMemcpyHtoDAsync") == 4 * 2 * 13 + 2 * 3
    # no buffer ever whole on the host: only guard bands and the two differing slots
    # (with run 1's copy of each) come back outside the staging slots
    assert sorted(copies) == [256] * 6 + [4 * (BIG_N % 4096)] * 2 + [transfer.SLOT_BYTES] * 2
    assert not vector_add.memory


def test_host_need_counts_only_what_is_kept_whole():
    spec = load_spec(CONFIGS / "vector_add.yaml", parse_overrides(["N=1073741824"]))
    need, parts = capacity.host_need(spec)
    assert need < 4 << 30                   # 12 GiB of buffers, none kept whole
    assert parts == [parts[-1]] and parts[-1].startswith("staging and workers")


@pytest.mark.parametrize("config, override, field", [
    ("triton_matmul.yaml", "M=500", "args.M"), ("triton_softmax.yaml", "ROWS=810", "args.n_rows")])
def test_a_broken_specialization_is_named_before_data_that_no_longer_fits(
        device, capsys, config, override, field):
    """M=500 also makes matmul_a.npy the wrong shape; what the binary was
    compiled for is the first thing to say, as in a dry run."""
    code, _, err = run_cli(capsys, "launch", CONFIGS / config, "--set", override, "--no-bench")
    assert code == 2 and f"{field}: {override.split('=')[1]} is not" in err, err
    assert "not a multiple of 16" in err and len(err.strip().splitlines()) == 1


def test_a_kernel_without_buffers_still_reports_its_guards(device, fake_libcuda, capsys):
    fake_libcuda.set_param_sizes([])
    code, out, _ = run_cli(capsys, "launch", "--json", "--no-bench", CONFIGS / "empty0.yaml")
    guards = json.loads(out)["guards"]
    assert code == 0 and guards["passed"] is True and guards["buffers"] == 0
    assert guards["violations"] == []


def test_a_cold_budget_pays_for_the_flush_too(device, capsys):
    """The fake's clock gives every launch 3 us, the L2 flush and the clock probe
    after each sample included, and each event pair 2 us more. The estimate is a
    pair around 5 samples: hot 10 launches (32 us), cold 15 (47 us), so a 6 ms
    budget takes 6000 / 6.4 and 6000 / 9.4."""
    counts = {}
    for l2 in ("hot", "cold"):
        code, out, _ = run_cli(capsys, "launch", "--json", CONFIGS / "vector_add.yaml",
                               "--l2", l2, "--rep", "6", "--warmup", "1")
        counts[l2] = json.loads(out)["timing"]["samples"]
    assert counts == {"hot": 938, "cold": 639}


def test_runs_of_one_session_share_the_pinned_staging_slots(device):
    """Pinning costs milliseconds per MiB: a session keeps its slots from run to
    run and makes bigger ones only for a bigger buffer."""
    from cubinrun.pipeline.result import RunOptions
    from cubinrun.pipeline.session import run_spec
    from cubinrun.runs.worker import Runner
    runner = Runner(0, RunOptions(bench=False, progress=False))
    try:
        for n in (4096, 8192, 4096):
            run_spec(CONFIGS / "vector_add.yaml", {"N": str(n)}, runner.options, runner)
        assert device.calls.count("cuMemHostAlloc") == 8        # 4 slots, then 4 bigger
        assert device.calls.count("cuMemFreeHost") == 4
    finally:
        runner.close()
    assert device.calls.count("cuMemFreeHost") == 8


def test_one_runs_checkers_are_made_at_a_time(monkeypatch):
    """A run that failed before its check leaves its reference being made; the
    next run's waits for it instead of making a second one beside it."""
    import threading
    from cubinrun.gpu import outputs
    from cubinrun.hostdata.threads import on_thread
    inside, most = [0], [0]
    release = threading.Event()

    class Slow:
        def __init__(self, *args, **kwargs):
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            release.wait(5)
            inside[0] -= 1

    class Spec:
        checks = [type("Check", (), {"output": "out", "region": None, "line": 1})()]
        buffers = {"out": type("Buffer", (), {"shape": (4,), "dtype": None})()}
        globals, path = {}, "s.yaml"

        def expression_env(self):
            return {}
    monkeypatch.setattr("cubinrun.hostdata.check.Checker", Slow)
    first = on_thread(outputs.make_checkers, Spec(), {})
    second = on_thread(outputs.make_checkers, Spec(), {})
    time.sleep(0.2)
    release.set()
    assert len(first.result(5)) == len(second.result(5)) == 1 and most[0] == 1
