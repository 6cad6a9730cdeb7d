"""Scale-out on the fake driver: `--devices` (one spawned worker per GPU, each
with its own CUDA_VISIBLE_DEVICES), the files a run carries to a worker that
shares no file system (runs/bundle.py, used by the Ray backend), and the
command line around them. The Ray backend itself is in test_ray_backend.py.

The fake has several devices when $FAKECUDA_DEVICES is set, and honours
CUDA_VISIBLE_DEVICES then (tests/fakecuda/device.py): a worker that was not
given its own card would report device 0's UUID."""
from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cli import run as run_cli
from support.fake_runs import FAST, comparable, fake_uuid, workers  # noqa: F401  (fixtures)
from support.repo import CONFIGS, REPO
from support.specs import passing, spec_copy  # noqa: F401  (fixtures)

from cubinrun.errors import EXIT_CHECK_FAILED, EXIT_CUDA, EXIT_USAGE, UsageError
from cubinrun.pipeline.result import RunOptions
from cubinrun.runs.bundle import Mirror, digest, needed_files, run_mirrored
from cubinrun.runs.devices import parse_devices, placements, spread
from cubinrun.runs.expand import expand
from cubinrun.runs.worker import Runner
from support.platforms import skip_on_windows


def test_devices_lists_parse_and_spread_over_cards():
    assert parse_devices("all") is None
    assert parse_devices("0, 2,2") == [0, 2, 2]
    for bad in ("", "0,x", "-1", "0;1"):
        with pytest.raises(UsageError, match="--devices"):
            parse_devices(bad)
    assert spread([0, 0, 1, 1]) == [0, 1, 0, 1]
    assert spread([2, 0, 0]) == [2, 0, 0]


def test_placements_give_each_worker_its_card_by_this_process_numbering(device, monkeypatch):
    monkeypatch.setenv("FAKECUDA_DEVICES", "4")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")       # what this process was given
    found = placements("all")
    assert [p.env["CUDA_VISIBLE_DEVICES"] for p in found] == ["3", "1"]
    assert all(p.env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and p.ordinal == 0 for p in found)
    assert [(p.tag["ordinal"], p.tag["uuid"]) for p in found] == [(0, fake_uuid(3)),
                                                                   (1, fake_uuid(1))]
    assert "shared_by" not in found[0].tag and found[0].tag["host"]
    shared = placements("1", workers_per_gpu=3, limit=2)      # no more workers than runs
    assert [p.env["CUDA_VISIBLE_DEVICES"] for p in shared] == ["1", "1"]
    assert [p.tag["shared_by"] for p in shared] == [2, 2]
    with pytest.raises(UsageError, match=r"--devices 0,2: there are 2 devices \(0..1\)"):
        placements("0,2")


def test_different_models_are_refused_unless_mixed(device, monkeypatch, capsys):
    monkeypatch.setenv("FAKECUDA_DEVICES", "2")
    monkeypatch.setenv("FAKECUDA_NAMES", "Fake H200,Fake A100")
    with pytest.raises(UsageError, match="0: Fake H200, 1: Fake A100.*--mixed-devices"):
        placements("all")
    assert [p.tag["name"] for p in placements("all", mixed=True)] == ["Fake H200", "Fake A100"]
    assert len(placements("1,1")) == 2                        # one model: fine
    code, _, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--devices", "all",
                           "--axis", "N=[256,512]")            # two runs: both cards in use
    assert code == EXIT_USAGE and err.count("\n") == 1 and "--mixed-devices" in err


def test_devices_spread_a_sweep_with_the_results_of_one_worker(workers, device, passing,
                                                               tmp_path, capsys):
    workers.setenv("FAKECUDA_DEVICES", "2")
    specs = (passing, CONFIGS / "vector_add.yaml", "--axis", "N=[256,512,1024]", *FAST)
    code, out, _ = run_cli(capsys, "launch", "--json", *specs)
    plain = json.loads(out)["results"]
    table = tmp_path / "r.csv"
    code_spread, out, err = run_cli(capsys, "launch", "--json", *specs, "--devices", "all",
                                    "--csv", table)
    spread_results = json.loads(out)["results"]
    rows = list(csv.DictReader(table.open()))
    assert [(int(r["device_ordinal"]), r["device_uuid"]) for r in rows] == \
        [(r["device"]["ordinal"], r["device"]["uuid"]) for r in spread_results]
    assert code == code_spread == EXIT_CHECK_FAILED and "note:" not in err
    assert [comparable(r) for r in spread_results] == [comparable(r) for r in plain]
    assert [r["exit_code"] for r in plain] == [0, 0, 0, 1, 1, 1]
    cards = {r["device"]["ordinal"]: r["device"]["uuid"] for r in spread_results}
    assert cards == {0: fake_uuid(0), 1: fake_uuid(1)}        # each worker saw its own card
    assert all(r["device"]["host"] and r["device"]["name"] == "Fake H200"
               for r in spread_results)
    assert all(r["timing"]["median_us"] == pytest.approx(3.0) for r in spread_results)


def test_two_workers_share_one_card_and_a_killed_one_fails_only_its_run(workers, device,
                                                                         passing, capsys):
    skip_on_windows("the fake crash is a SIGKILL")
    workers.setenv("FAKECUDA_CRASH", "fault_kernel")
    code, out, err = run_cli(capsys, "launch", "--json", passing, CONFIGS / "fault.yaml",
                             passing, passing, *FAST, "--devices", "0,0")
    results = json.loads(out)["results"]
    assert code == EXIT_CUDA and [r["exit_code"] for r in results] == [0, EXIT_CUDA, 0, 0]
    assert "the worker process running it was killed by SIGKILL" in \
        results[1]["error"]["message"]
    # the failed run is tagged with the card its worker had, as the others are
    assert results[1]["device"] == {"ordinal": 0, "name": "Fake H200", "uuid": fake_uuid(0),
                                    "host": results[0]["device"]["host"], "shared_by": 2}
    assert all(r["device"]["shared_by"] == 2 for r in results)
    assert "note: several workers share GPU 0" in err


def test_one_run_on_a_worker_keeps_the_single_document_and_prints_a_table(workers, device,
                                                                          passing, capsys):
    code, out, _ = run_cli(capsys, "launch", "--json", passing, *FAST, "--devices", "0")
    report = json.loads(out)
    assert code == 0 and "results" not in report and report["device"]["uuid"] == fake_uuid(0)
    code, out, _ = run_cli(capsys, "launch", passing, "--no-bench", "--devices", "0")
    assert code == 0 and out.strip().splitlines()[-1] == "1 run: 1 ok; exit 0"


def test_an_untrusted_cache_is_one_warning_for_all_workers(workers, device, passing, capfd,
                                                          tmp_path):
    """The launch process checks the cache before it starts workers, which
    inherit its private folder: one warning, not one per worker (issue 24)."""
    skip_on_windows("the cache's owner and modes are POSIX checks")
    import os
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    cache.chmod(0o777)
    workers.setenv("CUBINRUN_CACHE_DIR", str(cache))
    with pytest.raises(SystemExit) as done:
        from cubinrun.cli import main
        main(["launch", str(passing), str(passing), "--no-bench", "--devices", "0,0"])
    err = capfd.readouterr().err
    assert done.value.code == 0, err
    assert [line for line in err.splitlines() if "warning: cache not used" in line] == [
        f"warning: cache not used: {cache} is writable by others (mode 777); cubinrun trusts "
        f"only a cache this user alone can write, so this run builds in "
        f"{os.environ['CUBINRUN_CACHE_DIR']}"]
    assert not any(cache.iterdir())


def test_the_table_names_the_gpu_only_when_runs_used_several():
    from cubinrun.results.rows import device_labels
    on = lambda host, ordinal: {"device": {"host": host, "ordinal": ordinal,  # noqa: E731
                                           "uuid": f"{host}{ordinal}"}}
    assert device_labels([on("a", 0), on("a", 0)]) is None
    assert device_labels([on("a", 0), on("a", 1)]) == ["0", "1"]
    assert device_labels([on("a", 0), on("b", 0), {}]) == ["a:0", "b:0", ""]


@pytest.mark.parametrize("args, message", [
    (("--devices", "0", "--ray"), "choose one"),
    (("--devices", "0", "--device", "0"), "--device picks one GPU"),
    (("--workers-per-gpu", "2"), "go with --devices or --ray"),
    (("--devices", "0", "--workers-per-gpu", "0"), "expected 1 to 16"),
    (("--devices", "0", "--dry-run"), "--dry-run needs no GPU"),
    (("--ray", "--sanitize"), "--sanitize runs each run in its own process"),
    (("--ray", "--workers-per-gpu", "2", "--devices", "0"), "choose one"),
])
def test_scale_out_usage_errors_are_one_line(device, capsys, args, message):
    code, out, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", *args)
    assert code == EXIT_USAGE and message in err and err.count("\n") == 1 and not out


def test_ray_without_ray_installed_says_how_to_get_it(device, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)            # import ray -> ImportError
    code, _, err = run_cli(capsys, "launch", CONFIGS / "vector_add.yaml", "--ray")
    assert code == EXIT_USAGE
    assert err == "error: --ray needs Ray, an optional extra: pip install 'cubinrun[ray]'\n"


def test_ray_takes_the_next_word_as_its_address_only_when_it_is_one():
    from cubinrun.cli.launch import optional_address
    assert optional_address(["a.yaml", "--ray"]) == ["a.yaml", "--ray=local"]
    assert optional_address(["--ray", "a.yaml"]) == ["--ray=local", "a.yaml"]
    for address in ("auto", "local", "10.0.0.2:6379", "ray://head:10001", "[::1]:6379"):
        assert optional_address(["--ray", address, "a.yaml"]) == [f"--ray={address}", "a.yaml"]
    assert optional_address(["--ray", "--json", "--", "--ray"]) == ["--ray=local", "--json",
                                                                    "--", "--ray"]


# --- the files a run carries ------------------------------------------------------------

@pytest.fixture
def project(tmp_path, monkeypatch):
    """A suite as a user lays it out: specs/, kernels/, data/, paths relative."""
    root = tmp_path / "project"
    (root / "kernels").mkdir(parents=True)
    (root / "data").mkdir()
    cubin = "vector_add.sm_90.cubin"
    (root / "kernels" / cubin).write_bytes((REPO / "kernels" / "build" / cubin).read_bytes())
    np.save(root / "data" / "x.npy", np.arange(256, dtype=np.float32))
    text = (CONFIGS / "vector_add.yaml").read_text()
    text = text.replace("../kernels/build/", "../kernels/").replace("N: 1048576", "N: 256")
    text = text.replace("x: {shape: [N], init: random}",
                        "x: {shape: [N], init: {file: ../data/x.npy}}")
    text = text.replace("out: {shape: [N], init: zeros}",
                        "out: {shape: [N], init: zeros, save: ../out/out.npy}")
    text = text.replace("expect: x + y", "expect: 0 * x")
    (root / "specs").mkdir()
    (root / "specs" / "add.yaml").write_text(text)
    (root / "kernels" / "k.cu").write_text('#include "common.h"\n__global__ void k() {}\n')
    (root / "kernels" / "common.h").write_text('#include "inner/more.h"\n')
    (root / "kernels" / "inner").mkdir()
    (root / "kernels" / "inner" / "more.h").write_text("// nothing\n")
    (root / "specs" / "src.yaml").write_text(
        "kernel: {source: ../kernels/k.cu, arch: sm_90}\nsignature: {}\ngrid: [1]\n")
    monkeypatch.chdir(root)
    return root


def test_a_run_names_every_file_it_reads(project):
    add = expand(["specs/add.yaml"], {})[0]
    assert sorted(p.relative_to(project) for p in needed_files(add)) == [
        Path("data/x.npy"), Path("kernels/vector_add.sm_90.cubin"), Path("specs/add.yaml")]
    source = expand(["specs/src.yaml"], {})[0]
    assert sorted(p.relative_to(project) for p in needed_files(source)) == [
        Path("kernels/common.h"), Path("kernels/inner/more.h"), Path("kernels/k.cu"),
        Path("specs/src.yaml")]
    conv = expand([str(CONFIGS / "conv1d_constant.yaml")], {})[0]     # a Python reference
    assert sorted(p.name for p in needed_files(conv)) == [
        "conv1d_constant.cu", "conv1d_constant.yaml", "conv1d_refs.py"]
    softmax = expand([str(CONFIGS / "triton_softmax.yaml")], {})[0]    # names sm_count
    assert sorted(p.name for p in needed_files(softmax)) == [
        "softmax_kernel.cubin", "softmax_kernel.json", "softmax_kernel.source",
        "softmax_x.npy", "softmax_y.npy", "triton_softmax.yaml"]
    broken = project / "specs" / "broken.yaml"
    broken.write_text("kernel: [")
    assert needed_files(expand([str(broken)], {})[0]) == [broken]   # the worker says why


def test_a_run_from_a_mirror_needs_none_of_the_original_files(device, project, tmp_path):
    skip_on_windows("it renames the project folder with files open, which Windows refuses")
    (project / "specs" / "bad.yaml").write_text(
        (project / "specs" / "add.yaml").read_text().replace("vector_add.sm_90", "gone"))
    tasks = expand(["specs/add.yaml", str(project / "specs" / "add.yaml"),
                    str(project / "specs" / "bad.yaml")], {})
    contents = {str(p): p.read_bytes() for t in tasks for p in needed_files(t)}
    cwd = str(project)
    project.rename(tmp_path / "elsewhere")                   # nothing left at the old paths
    mirror = Mirror(tmp_path / "mirror")
    assert sorted(mirror.missing({path: "d" for path in contents})) == sorted(contents)
    for path, data in contents.items():
        mirror.write(path, data)
    assert mirror.missing({path: digest(data) for path, data in contents.items()}) == []
    runner = Runner(0, RunOptions(bench=False))
    try:
        records = [run_mirrored(runner, mirror, task, cwd) for task in tasks]
    finally:
        runner.close()
    for (record, saved), task, prefix in zip(records[:2], tasks, ("", f"{cwd}/")):
        result = record.to_json()
        assert record.exit_code == 0 and record.task is task, record.error
        assert result["spec"] == task.spec
        assert result["kernel_file"] == f"{prefix}kernels/vector_add.sm_90.cubin"
        assert list(saved) == result["saved"] == [f"{prefix}out/out.npy"]
        out = np.load(io.BytesIO(saved[result["saved"][0]]))
        assert out.shape == (256,) and not out.any()
    record, saved = records[2]
    assert record.exit_code == EXIT_USAGE and not saved
    assert record.error == f"{cwd}/specs/bad.yaml:3: kernel.cubin: no such file: " \
                           f"{cwd}/kernels/gone.cubin"
    assert str(mirror.root) not in json.dumps([r.to_json() for r, _ in records])
    mirror.close()
    assert not mirror.root.exists()


def test_a_mirror_takes_only_plain_absolute_paths(tmp_path):
    """The launch process sends absolute paths; one with `..` (or relative)
    could put a file outside the worker's private folder (issue 24)."""
    mirror = Mirror(tmp_path / "mirror")
    escape = str(tmp_path / "mirror" / ".." / ".." / "planted.txt")
    for path in (escape, "relative/x.npy", "/a/../../b"):
        with pytest.raises(UsageError, match="not a plain absolute path"):
            mirror.write(path, b"x")
    assert not (tmp_path.parent / "planted.txt").exists()
    ok = tmp_path / "ok.bin"
    mirror.write(str(ok), b"x")
    assert (mirror.root / ok.relative_to(ok.anchor)).read_bytes() == b"x"


def test_a_spec_path_that_climbs_above_the_top_is_one_line_in_a_mirror(device, project,
                                                                        tmp_path):
    """`../` x 40 stops at / here, but from a mirror it would reach the
    worker's own files: the run is exit 2 with one line, and an absolute path
    with `..` is refused as every carried path is; `../specs/...` that stays
    inside runs."""
    skip_on_windows("the paths are POSIX paths")
    add = project / "specs" / "add.yaml"
    climbing = "../" * 40 + str(add).lstrip("/")
    dotted = str(project / "specs" / ".." / "specs" / "add.yaml")
    tasks = expand([climbing, dotted, "../project/specs/add.yaml"], {})
    mirror = Mirror(tmp_path / "mirror")
    for path in needed_files(tasks[0]):
        mirror.write(str(path), path.read_bytes())
    runner = Runner(0, RunOptions(bench=False))
    try:
        records = [run_mirrored(runner, mirror, task, str(project)) for task in tasks]
    finally:
        runner.close()
    (climb, _), (absolute, _), (inside, _) = records
    assert [r.exit_code for r in (climb, absolute, inside)] == [EXIT_USAGE, EXIT_USAGE, 0]
    assert climb.error_line() == (
        f"error: {climbing}: the path climbs above the top folder, so on a worker it would "
        "lead out of its private folder; name the file without the extra '../'")
    assert absolute.error_line() == (
        f"error: {dotted}: not a plain absolute path, so it could lead out of the worker's "
        "private folder; the files a run carries stay inside")
    mirror.close()


def test_a_save_path_of_a_mirrored_run_stays_in_the_mirror(device, project, tmp_path):
    """`save: ../../(...)/x.npy` climbs above / here (where it stops) but out of
    the mirror on a worker: exit 2 naming the field. An absolute save goes
    below the mirror's root and comes back under its own name."""
    skip_on_windows("the paths are POSIX paths")
    add = project / "specs" / "add.yaml"
    outside = tmp_path / "outside"
    climbing = "../" * 40 + str(outside / "x.npy").lstrip("/")
    (project / "specs" / "climb.yaml").write_text(
        add.read_text().replace("save: ../out/out.npy", f"save: {climbing}"))
    (project / "specs" / "absolute.yaml").write_text(
        add.read_text().replace("save: ../out/out.npy", f"save: {outside / 'abs.npy'}"))
    tasks = expand(["specs/climb.yaml", "specs/absolute.yaml"], {})
    mirror = Mirror(tmp_path / "mirror")
    for task in tasks:
        for path in needed_files(task):
            mirror.write(str(path), path.read_bytes())
    runner = Runner(0, RunOptions(bench=False))
    try:
        (climb, nothing), (absolute, saved) = [run_mirrored(runner, mirror, task, str(project))
                                               for task in tasks]
    finally:
        runner.close()
    assert climb.exit_code == EXIT_USAGE and not nothing
    assert "args.out.save" in climb.error and "climbs out of the folder" in climb.error
    assert absolute.exit_code == 0, absolute.error
    assert list(saved) == [str(outside / "abs.npy")]
    assert not outside.exists()                         # nothing written outside the mirror
    mirror.close()


def test_workers_share_out_the_host_threads(monkeypatch):
    from cubinrun.runs import devices
    monkeypatch.setenv("CUBINRUN_THREADS", "16")
    assert devices._threads_per_worker(4) == 4
    assert devices._threads_per_worker(32) == 1
