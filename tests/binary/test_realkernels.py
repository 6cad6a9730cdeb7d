"""Kernel Tuner's and cuda-samples' kernels as their authors wrote them
(configs/realkernels), dry-run for sm_90 on the CPU. The files are fetched by
kernels/thirdparty/fetch.sh (never committed); without them these tests skip."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cubinrun.cli import main
from cubinrun.specfile.yamlload import load_yaml_file
from support.repo import REPO

SPECS = REPO / "configs" / "realkernels"
THIRDPARTY = REPO / "kernels" / "thirdparty"
HAVE_NVCC = shutil.which("nvcc") is not None and shutil.which("gcc") is not None


def fetched(spec: Path) -> bool:
    source = load_yaml_file(spec)["kernel"]["source"]
    return (spec.parent / source).is_file()


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main([*map(str, args)])
    out, err = capsys.readouterr()
    return done.value.code, out, err


def first_point(spec: Path) -> list[str]:
    """--axis options pinning each swept var to its first value: one compile per spec."""
    sweep = load_yaml_file(spec).get("sweep", {})
    return [arg for var, values in sweep.items()
            for arg in ("--axis", f"{var}={values[0] if isinstance(values, list) else values}")]


@pytest.mark.parametrize("name", sorted(p.name for p in SPECS.glob("*.yaml")))
def test_each_real_kernel_spec_dry_runs_for_sm_90(capsys, name):
    spec = SPECS / name
    if not fetched(spec):
        pytest.skip("third-party kernels not fetched: kernels/thirdparty/fetch.sh")
    if load_yaml_file(spec)["kernel"].get("compiler") == "nvcc" and not HAVE_NVCC:
        pytest.skip("needs nvcc and gcc")
    code, _, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", spec, *first_point(spec))
    assert code == 0, err


def test_a_template_instance_the_host_code_never_made_names_the_source(capsys):
    spec = SPECS / "cs_reduction.yaml"
    if not fetched(spec) or not HAVE_NVCC:
        pytest.skip("needs the fetched cuda-samples, nvcc and gcc")
    code, _, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", spec,
                       "--axis", "BLOCK=1024")
    assert code == 2
    assert ("reduction_kernel.cu has no kernel 'reduce6<float, 1024, true>'; it has "
            "void reduce6<") in err
    assert ".cache" not in err


def test_the_fetch_script_pins_every_file_with_its_licence():
    script = (THIRDPARTY / "fetch.sh").read_text()
    pinned = [line.split('"')[1].split() for line in script.splitlines()
              if line.strip().startswith('"') and len(line.split('"')[1].split()) == 2]
    paths = [path for path, _ in pinned]
    assert paths.count("LICENSE") == 2
    assert all(len(digest) == 64 for _, digest in pinned)
    for spec in SPECS.glob("*.yaml"):
        source = load_yaml_file(spec)["kernel"]["source"]
        assert any(source.endswith(path) for path in paths), spec.name
