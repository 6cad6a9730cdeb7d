"""Nsight Compute: the details page captured on the H200 (tests/fixtures/debug),
the command cubinrun builds, and `cubinrun profile` against a stand-in ncu."""
from __future__ import annotations

import gzip
import json

import pytest
from support.cli import run as run_cli

from cubinrun.debug.profiler import ncu_command, parse_details, summarize
from cubinrun.errors import UsageError
from support.repo import REPO
from support.stand_in_ncu import stand_in  # noqa: F401  (the fixture)

FIXTURES = REPO / "tests" / "fixtures" / "debug"


def capture(name: str) -> str:
    return gzip.decompress((FIXTURES / name).read_bytes()).decode()


def test_details_from_a_profiled_run_skip_the_program_s_own_lines():
    # ncu's stdout with cubinrun's table mixed in, values in base units (ns, hz)
    [launch] = parse_details(capture("ncu_details.csv.log.gz"))
    assert (launch.kernel, launch.block, launch.grid) == ("add_kernel", "(128, 1, 1)",
                                                          "(1024, 1, 1)")
    s = summarize(launch)
    assert s.duration_us == pytest.approx(6.624)
    assert (s.dram_pct, s.memory_pct, s.compute_pct) == (26.46, 26.46, 10.97)
    assert (s.achieved_occupancy_pct, s.theoretical_occupancy_pct, s.registers) == (44.03, 100, 24)
    # no unit near its peak: the small grid (0.5 waves) leaves it latency bound
    assert s.limiter == "latency: no unit above 60% of peak (busiest: L2 cache at 45%)"
    assert s.occupancy_limiter == "warps (16 blocks per SM)"
    assert s.advice.startswith("This kernel grid is too small to fill the available resources")


def test_details_imported_from_a_report_use_scaled_units():
    [launch] = parse_details(capture("ncu_import_details.csv.log.gz"))
    assert launch.get("GPU Speed Of Light Throughput", "Duration").unit == "us"
    s = summarize(launch)
    assert s.duration_us == pytest.approx(6.78) and s.dram_pct == 25.79
    assert s.achieved_occupancy_pct == 43.95 and s.registers == 24


def test_a_busy_unit_is_the_limiter():
    text = capture("ncu_import_details.csv.log.gz").replace(
        '"DRAM Throughput","%","25.79"', '"DRAM Throughput","%","91.5"')
    assert summarize(parse_details(text)[0]).limiter == "DRAM throughput (92% of peak)"


def test_no_records_is_an_empty_list():
    assert parse_details("==PROF== Disconnected\n") == []


def test_the_command_profiles_one_launch_of_the_kernel_by_mangled_name():
    command = ncu_command("ncu", "_Z3addPfS_", "cold", "rep", "log", [], ["prog"])
    text = " ".join(command)
    for part in ("--clock-control none", "--cache-control all", "--kernel-name-base mangled",
                 "--kernel-name _Z3addPfS_", "--launch-skip 0", "--launch-count 1",
                 "--section SpeedOfLight", "--section Occupancy", "--section LaunchStats",
                 "--export rep", "--log-file log"):
        assert part in text
    assert command[-1] == "prog"
    assert "--cache-control none" in " ".join(ncu_command("ncu", "k", "hot", "r", "l", [], []))


def test_ncu_args_replace_cubinrun_s_own_options():
    command = ncu_command("ncu", "k", "cold", "rep", "log",
                          ["--clock-control", "base", "-c=1", "--set", "full"], ["prog"])
    assert command.count("--clock-control") == 1 and "none" not in command
    assert "--launch-count" not in command
    assert command[-6:] == ["--clock-control", "base", "-c=1", "--set", "full", "prog"]
    with pytest.raises(UsageError, match="use `cubinrun profile -o PATH`"):
        ncu_command("ncu", "k", "cold", "rep", "log", ["-o", "x"], [])


def test_profile_prints_the_summary(stand_in, capsys):
    record = stand_in()
    code, out, _ = run_cli(capsys, "profile", REPO / "configs" / "vector_add.yaml",
                           "--set", "N=4096")
    args = json.loads(record.read_text())
    assert code == 0
    assert args[args.index("--kernel-name") + 1] == "add_kernel"
    assert args[args.index("-m") + 1:args.index("-m") + 3] == ["cubinrun", "launch"]
    assert args[-2:] == ["--set", "N=4096"]
    assert "duration            6.78 us" in out
    assert "DRAM throughput     25.8% of peak" in out
    assert "43.9% achieved" in out or "44.0% achieved" in out
    assert "registers           24 per thread" in out
    assert "limiter             latency" in out and "check out: pass" in out


def test_profile_json_and_a_kept_report(stand_in, tmp_path, capsys):
    stand_in()
    keep = tmp_path / "kept.ncu-rep"
    code, out, _ = run_cli(capsys, "profile", "--json", "-o", keep,
                           REPO / "configs" / "vector_add.yaml", "--", "--clock-control", "base")
    profile = json.loads(out)["profile"]
    assert code == 0 and keep.exists() and profile["report"] == str(keep)
    assert profile["clock_control"] == "base" and profile["l2"] == "cold"
    assert profile["duration_us"] == pytest.approx(6.78) and profile["registers"] == 24


def test_profile_passes_on_the_check_s_exit_code(stand_in, capsys):
    stand_in(code=1)
    code, _, _ = run_cli(capsys, "profile", REPO / "configs" / "vector_add.yaml")
    assert code == 1


def test_no_ncu_is_exit_4(monkeypatch, tmp_path, capsys):
    from cubinrun.debug import tools
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(tools, "TOOLKIT_BIN", tmp_path / "no-toolkit")
    code, out, err = run_cli(capsys, "profile", REPO / "configs" / "vector_add.yaml")
    assert code == 4 and out == ""
    assert err.strip() == ("error: ncu (Nsight Compute) not found: looked on PATH, $CUDA_HOME/bin "
                           f"(unset), $CUDA_PATH/bin (unset) and {tmp_path / 'no-toolkit'}")
