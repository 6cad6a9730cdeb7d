"""Device values in expressions: sm_count, l2_bytes, max_shared_optin, arch and
warp_size, from a device, a saved `props --json` file or --arch defaults."""
import json

import pytest

from cubinrun.errors import SpecError, UsageError
from cubinrun.specfile import load_spec
from cubinrun.specfile.device_values import (
    KNOWN_GPUS, DeviceValues, for_arch, from_props_file, unavailable)
from support.repo import REPO

PERSISTENT = """\
kernel: {cubin: k.cubin}
signature: {x: "*fp32", n: i32, tiles: i32}
vars:
  N: 1048576
  TILES: cdiv(N, 1024)
  PROGRAMS: min(sm_count * 2, TILES)
args:
  x: {shape: [N]}
  n: N
  tiles: TILES
grid: [PROGRAMS]
launch: {shared: "max_shared_optin - 1024"}
check:
  x: {expect: "x * warp_size / 32 + arch - 90"}
bench: {bytes: "l2_bytes * 0 + 4 * N"}
"""


def values(**given):
    return DeviceValues(lambda: given, "test device")


def test_device_values_reach_vars_grid_launch_check_and_bench(write_spec):
    spec = load_spec(write_spec(PERSISTENT), device=for_arch("sm_90a"))
    assert spec.vars["PROGRAMS"] == 132 * 2 and spec.grid == (264, 1, 1)
    assert spec.launch.shared == 232448 - 1024
    assert spec.bench.bytes == 4 * 1048576
    assert spec.device_values == {"sm_count": 132, "max_shared_optin": 232448,
                                  "warp_size": 32, "arch": 90, "l2_bytes": 50 << 20}
    assert spec.device_source == "--arch sm_90a (an H100 SXM)"
    assert spec.expression_env()["arch"] == 90


def test_a_var_of_the_same_name_wins_and_nothing_is_fetched(write_spec):
    fetched = []
    device = DeviceValues(lambda: fetched.append(1) or {"sm_count": 7}, "d")
    text = PERSISTENT.replace("  N: 1048576", "  N: 1048576\n  sm_count: 3")
    text = text.replace("max_shared_optin - 1024", "0").replace("+ arch - 90", "")
    text = text.replace("warp_size / 32", "2").replace("l2_bytes * 0 +", "")
    spec = load_spec(write_spec(text), device=device)
    assert spec.grid == (6, 1, 1) and not fetched and spec.device_values == {}
    assert spec.device_source is None


def test_without_a_device_the_error_says_how_to_give_one(write_spec):
    path = write_spec(PERSISTENT)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    message = str(err.value)
    assert "launch.shared: max_shared_optin is a device value and a dry run has no GPU" in message
    assert "--props FILE" in message and "--arch (sm_80, sm_90" in message
    with pytest.raises(SpecError, match="knows no GPU of sm_75 .*--props FILE"):
        load_spec(path, device=for_arch("sm_75"))
    with pytest.raises(SpecError, match="l2_bytes is a device value that test device does not"):
        load_spec(path, device=values(sm_count=1, max_shared_optin=2048, warp_size=32, arch=90))


def test_the_known_gpus_give_every_name():
    for arch in KNOWN_GPUS:
        device = for_arch(arch)
        assert [device.get(n) > 0 for n in ("sm_count", "l2_bytes", "max_shared_optin",
                                             "arch", "warp_size")] == [True] * 5
    with pytest.raises(UsageError):
        for_arch("gfx942")


def test_props_file_from_cubinrun_props_json(tmp_path, write_spec):
    device = {"name": "NVIDIA H200", "arch": "sm_90", "sm_count": 132, "l2_bytes": 52428800,
              "shared_per_block_optin": 232448, "warp_size": 32, "ecc": True}
    other = {**device, "name": "small", "sm_count": 16}
    path = tmp_path / "props.json"
    path.write_text(json.dumps({"devices": [device, other]}))
    spec = load_spec(write_spec(PERSISTENT), device=from_props_file(str(path)))
    assert spec.grid == (264, 1, 1) and spec.device_source == "--props props.json (NVIDIA H200)"
    spec = load_spec(write_spec(PERSISTENT), device=from_props_file(str(path), 1))
    assert spec.grid == (32, 1, 1)
    path.write_text(json.dumps(device))                 # one device's object also reads
    assert from_props_file(str(path)).get("arch") == 90


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected the output of `cubinrun props --json`"),
    ('{"devices": []}', "expected the output"),
    # int() would take 5000 digits (and refuse them with a traceback) or Arabic-Indic ones
    ('{"arch": "sm_%s"}' % ("9" * 5000), "device 0: arch: 'sm_999.* is not an arch"),
    ('{"arch": "sm_\\u0669\\u0660"}', "device 0: arch: .* is not an arch"),
])
def test_props_file_errors(tmp_path, content, fragment):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=fragment):
        from_props_file(str(path))
    with pytest.raises(UsageError, match="no device 3"):
        path.write_text('{"devices": [{}]}')
        from_props_file(str(path), 3)
    with pytest.raises(UsageError, match="missing.json: no such file"):
        from_props_file(str(tmp_path / "missing.json"))


def test_unavailable_names_the_reason():
    with pytest.raises(SpecError, match="warp_size is a device value and no GPU here: pass"):
        unavailable("no GPU here").get("warp_size")


def test_dry_run_takes_device_values_from_arch_or_props(capsys, tmp_path):
    from cubinrun.cli import main
    repo = REPO
    text = (repo / "configs/vector_add.yaml").read_text()
    text = text.replace("../kernels/", f"{repo}/kernels/")
    spec = tmp_path / "persistent.yaml"
    spec.write_text(text.replace("grid: [cdiv(N, BLOCK)]", "grid: [min(4 * sm_count, cdiv(N, BLOCK))]"))

    def run(*args):
        with pytest.raises(SystemExit) as done:
            main(["launch", str(spec), "--dry-run", *args])
        out, err = capsys.readouterr()
        return done.value.code, out, err

    code, out, err = run("--json", "--arch", "sm_90")
    plan = json.loads(out)
    assert code == 0 and plan["grid"] == [528, 1, 1]
    assert plan["device_values"] == {"values": {"sm_count": 132},
                                     "source": "--arch sm_90 (an H100 SXM)"}
    props = tmp_path / "props.json"
    props.write_text(json.dumps({"devices": [{"name": "Some GPU", "sm_count": 20}]}))
    code, out, err = run("--props", str(props))
    assert code == 0 and "grid 80" in out and "device values sm_count=20" in out
    code, out, err = run()
    assert code == 2 and "sm_count is a device value and a dry run has no GPU" in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as done:
        main(["launch", str(spec), "--props", str(props)])
    assert done.value.code == 2
    assert "--props describes a device for --dry-run" in capsys.readouterr().err
