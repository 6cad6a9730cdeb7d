"""docs/ and the README: every YAML example dry-runs, every link stays in the
repository and lands, every command, option and spec key is documented, and
the README's quick start is what CI runs."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import click
import pytest
from support.repo import REPO
from support.cli import run

from cubinrun.cli import cli
from cubinrun.specfile import sections

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(page.read_text()) if lang == language]


def examples() -> list[tuple[str, str]]:
    return [(f"{page.relative_to(REPO)}#{i}", body)
            for page in PAGES for i, body in enumerate(blocks(page, "yaml"))]


@pytest.mark.parametrize("name, text", examples(), ids=[n for n, _ in examples()])
def test_each_yaml_example_dry_runs(capsys, tmp_path, name, text):
    # the examples' paths are relative to configs/, beside kernels/
    if sys.platform == "win32":         # a symlink there needs a privilege
        shutil.copytree(REPO / "kernels", tmp_path / "kernels")
    else:
        (tmp_path / "kernels").symlink_to(REPO / "kernels")
    (tmp_path / "configs").mkdir()
    spec = tmp_path / "configs" / "example.yaml"
    spec.write_text(text)
    code, out, err = run(capsys, "launch", "--dry-run", "--arch", "sm_90", spec)
    assert (code, err) == (0, ""), f"{name}: {err}"


def test_the_docs_have_examples_of_each_kind_of_binary():
    kinds = {kind for _, text in examples() for kind in sections.EXACTLY_ONE["kernel"]
             if re.search(rf"^\s*{kind}:", text, re.M)}
    assert kinds >= {"cubin", "source", "triton"}


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {slug(m) for m in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_stay_in_the_repository_and_land(page):
    text = page.read_text()
    assert "shared/" not in text and "SPEC.md" not in text       # users never see those
    for target in _LINK.findall(_FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        assert goal.is_relative_to(REPO), f"{page.name}: {target} leaves the repository"
        assert goal.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor in anchors(goal), f"{page.name}: no heading for #{anchor}"


def commands(group: click.Group = cli, path: tuple[str, ...] = ()):
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            yield from commands(command, path + (name,))
        else:
            yield " ".join(path + (name,)), command


def command_section(name: str) -> str:
    text = (REPO / "docs" / "commands.md").read_text()
    start = text.index(f"\n### cubinrun {name}\n")
    end = text.find("\n### ", start + 1)
    return text[start:end if end > 0 else None]


@pytest.mark.parametrize("name, command", list(commands()), ids=[n for n, _ in commands()])
def test_every_command_and_option_is_documented(name, command):
    section = command_section(name)
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            for option in param.opts:
                if option not in ("--debug", "--no-color", "--help", "-h"):
                    assert f"`{option}" in section or f", {option}" in section, \
                        f"cubinrun {name}: {option} is not in docs/commands.md"


def test_the_common_options_and_exit_codes_are_documented():
    text = (REPO / "docs" / "commands.md").read_text()
    for option in ("--debug", "--no-color", "--version", "--json"):
        assert option in text
    codes = text[text.index("## Exit codes"):]
    for code in range(6):
        assert f"{code} " in codes


def test_every_spec_key_is_documented():
    text = (REPO / "docs" / "spec.md").read_text()
    reference = text[text.index("## Every section and key"):]
    for section, keys in sections.SECTIONS.items():
        for key in keys:
            assert f"| `{key.name}` |" in reference, f"{section}.{key.name}"


def test_the_readme_quick_start_is_what_ci_runs():
    readme = REPO / "README.md"
    setup, tests = blocks(readme, "sh")[:2]
    ci = (REPO / ".ci" / "run").read_text()
    assert setup.strip().replace(" launch ", " launch --dry-run ") in ci
    assert tests.strip() in ci
    # the wheel's run and Wine's (alongside) are commands whose failure fails CI
    commands = [line.strip() for line in ci.split("\n") if not line.lstrip().startswith("#")]
    assert any(c.startswith("bash .ci/wheel ||") for c in commands)
    assert any(c.startswith("bash .ci/wine ") and c.endswith("&") for c in commands)
    assert any(c.startswith('wait "$wine" ||') for c in commands)


def test_the_readme_shows_the_schema_comment():
    assert "# yaml-language-server: $schema=" in (REPO / "README.md").read_text()


INTERNALS = REPO / "docs" / "internals.md"
_FOLDER_SECTION = re.compile(r"^### `cubinrun/([\w/]+)/`$|^### The top level$", re.M)
_MODULE_ROW = re.compile(r"^\| `([\w.]+)` \|", re.M)
_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]*)`")


def internals_sections() -> dict[Path, list[str]]:
    """docs/internals.md's module tables: folder -> the modules its section lists."""
    text = INTERNALS.read_text()
    marks = list(_FOLDER_SECTION.finditer(text))
    sections = {}
    for mark, following in zip(marks, marks[1:] + [None]):
        body = text[mark.end():following.start() if following else len(text)]
        body = body.split("\n## ")[0]                     # the section ends at the next chapter
        folder = REPO / "cubinrun" / (mark.group(1) or "")
        sections[folder] = _MODULE_ROW.findall(body)
    return sections


def test_internals_has_one_section_per_folder_listing_exactly_its_modules():
    sections = internals_sections()
    folders = {p.parent for p in (REPO / "cubinrun").rglob("__init__.py")}
    assert set(sections) == folders
    for folder, listed in sections.items():
        present = sorted(p.name for p in folder.iterdir() if p.suffix in (".py", ".c")
                         and p.name not in ("__init__.py", "__main__.py"))
        assert sorted(listed) == present, folder


# folders the page names that are not the repository's: the cache's, an embeddable Python's
_ELSEWHERE = {"launchers/", "nvrtc/", "nvjitlink/", "cubins/", "include/", "libs/"}


def test_every_path_internals_names_exists():
    paths = set(_PATH.findall(INTERNALS.read_text())) - _ELSEWHERE
    assert paths
    for path in paths:
        assert (REPO / path).exists() or (REPO / "cubinrun" / path).exists(), path



def test_internals_names_every_folder_of_tests_and_bench():
    """The layout on docs/internals.md: each folder of tests/ and bench/ is named
    there, and those of the package's tests mirror a folder of cubinrun/."""
    text = INTERNALS.read_text()
    section = text[text.index("\n## Where the tests and benchmarks are\n") + 1:]
    section = section[:section.index("\n## ")]
    mirrored = re.search(r"^\| `tests/<folder>/` \| the tests of `cubinrun/<folder>/`: ([\w, ]+) \|$",
                         section, re.M).group(1).split(", ")
    named = set(re.findall(r"^\| `((?:tests|bench)/\w+)/` \|", section, re.M))
    present = {f"{top}/{p.name}" for top in ("tests", "bench") for p in (REPO / top).iterdir()
               if p.is_dir() and not p.name.startswith((".", "__"))}
    assert named | {f"tests/{name}" for name in mirrored} == present
    assert all((REPO / "cubinrun" / name / "__init__.py").is_file() for name in mirrored)

def json_keys() -> dict[str, list[str]]:
    """docs/many-runs.md's list of the keys `launch --json` carries: label -> keys."""
    text = (REPO / "docs" / "many-runs.md").read_text()
    section = text[text.index("### The `--json` document"):]
    section = section[:section.index("\n\n", section.index("\n- "))]
    items = re.findall(r"^- ([^:]+): (.*?)(?=^- |\Z)", section, re.M | re.S)
    # a key's own note in brackets names no key: `error` (null, or `{type, message}`)
    return {label: re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", body))
            for label, body in items}


def assert_documented(document: dict, *labels: str) -> None:
    keys = json_keys()
    for label in labels:
        missing = [key for key in keys[label] if key not in document]
        assert not missing, f"{label}: {missing} not in {sorted(document)}"


def test_the_json_documents_carry_the_keys_many_runs_md_lists(capsys, tmp_path):
    vector_add = REPO / "configs" / "vector_add.yaml"
    bad = tmp_path / "bad.yaml"
    bad.write_text("kernel: {cubin: nothing.cubin}\n")
    code, out, _ = run(capsys, "launch", "--dry-run", "--json", vector_add)
    assert code == 0
    assert_documented(json.loads(out), "every result", "a dry run's result adds its plan")
    code, out, _ = run(capsys, "launch", "--dry-run", "--json", bad)
    failed = json.loads(out)
    assert code == 2 and failed["status"] == "spec error" and failed["exit_code"] == 2
    assert_documented(failed, "every result")
    code, out, _ = run(capsys, "launch", "--dry-run", "--json", vector_add, bad)
    many = json.loads(out)
    assert code == 2 and [r["exit_code"] for r in many["results"]] == [0, 2]
    assert_documented(many["summary"], "`summary`")
    assert_documented(many["results"][0], "every result", "a dry run's result adds its plan")


def test_a_launchs_json_carries_the_keys_many_runs_md_lists(device, fake_libcuda, capsys):
    from support.cli import run as run_cli
    from support.repo import CONFIGS
    fake_libcuda.set_param_sizes([8, 8, 8, 4])
    code, out, err = run_cli(capsys, "launch", "--json", CONFIGS / "vector_add.yaml",
                             "--rep", "1", "--warmup", "1")
    assert code == 1, err                   # the fake driver runs no kernel: the check fails
    assert_documented(json.loads(out), "every result", "a launch's result adds")
