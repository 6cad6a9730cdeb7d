"""Names read from results files (a spec's path, a kernel's, a point's
values, a device's) are shown as written and never interpreted: in `history
check --markdown`'s GitHub-flavoured summary no HTML, emphasis, link or table
cell comes from a name (rendered here by markdown-it, the CommonMark parser
rich ships with, tables on); on a terminal (`history list`, `history check`,
`compare`, real processes) no escape sequence or rich markup from a name gets
through."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser

import pytest
from support.cli import run
from support.historydata import DEVICE, add_args, result, sha, write_commits
from support.repo import PACKAGE_PARENT

from cubinrun.errors import one_line

pytest.importorskip("alembic", reason="cubinrun history needs the history extra")
pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")

ESCAPES = "bench/\x1b[31mred\x1b]0;title\x07\r\u202eovr.yaml"
NAMES = ["bench/<img src=x onerror=alert(1)>.yaml", "reduce<float>", "[bold]x[/bold].yaml",
         "a|b *c* _d_ `e` [f](https://g.example) @h :+1: $j$ www.k.example &amp; \\.yaml",
         ESCAPES]
COMMITS = 12


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Every name 20% slower at the newest commit (a REGRESSION row each)."""
    folder = tmp_path_factory.mktemp("names")
    db = str(folder / "h.sqlite")
    files = write_commits(folder, COMMITS, {name: 5.0 for name in NAMES},
                          {name: (COMMITS - 1, 1.2) for name in NAMES})
    from cubinrun.cli import main
    for i, path in enumerate(files):
        with pytest.raises(SystemExit) as done:
            main(add_args(path, i, db))
        assert done.value.code == 0
    return folder, db


def cubinrun(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


class _Cells(HTMLParser):
    """The text of each table cell of an HTML document, and every tag seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells, self.tags, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def test_the_markdown_summary_shows_each_name_as_written(store):
    folder, db = store
    summary = folder / "summary.md"
    done = cubinrun("history", "check", "--db", db, "--branch", "main", "--markdown", summary,
                    "--commit-url", "https://example.org/c/{commit}", cwd=folder)
    assert done.returncode == 5, done.stderr
    from markdown_it import MarkdownIt
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(summary.read_text())
    cells = _Cells()
    cells.feed(html)
    # the table, its links and nothing else: no <img>, <em>, <code> or link from a name
    assert set(cells.tags) == {"h3", "p", "a", "table", "thead", "tbody", "tr", "th", "td"}
    assert html.count("<a href=") == 1 + 2 * len(NAMES)
    shown = cells.cells[6::6]
    assert sorted(shown) == sorted(f"{one_line(name)} on {DEVICE['name']}" for name in NAMES)
    assert cells.cells[7::6] == ["REGRESSION"] * len(NAMES)
    assert f'href="https://example.org/c/{sha(COMMITS - 1)}"' in html


def test_a_commit_name_is_quoted_in_its_link(tmp_path, capsys):
    """Any word `--commit` takes stays one link (its text escaped, its URL quoted)."""
    db = str(tmp_path / "h.sqlite")
    odd = "a)b<i>*`c"
    for i, median in enumerate([5.0] * 11 + [6.0]):
        path = tmp_path / f"{i}.jsonl"
        path.write_text(json.dumps(result("k.yaml", median)) + "\n")
        args = add_args(path, i, db)
        if i == 11:
            args[args.index("--commit") + 1] = odd
        assert run(capsys, *args)[0] == 0
    summary = tmp_path / "summary.md"
    code, _, _ = run(capsys, "history", "check", "--db", db, "--branch", "main",
                     "--markdown", summary, "--commit-url", "https://example.org/c/{commit}")
    from markdown_it import MarkdownIt
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(summary.read_text())
    assert code == 5 and "<i>" not in html and "<code>" not in html
    assert 'href="https://example.org/c/a%29b%3Ci%3E%2A%60c">a)b&lt;i&gt;*`c</a>' in html


@pytest.mark.parametrize("command", [("history", "list"), ("history", "check", "--branch", "main")])
def test_history_prints_names_without_their_control_characters(store, command):
    folder, db = store
    done = cubinrun(*command, "--db", db, cwd=folder)
    assert done.returncode in (0, 5), done.stderr
    assert "\x1b" not in done.stdout and "\r" not in done.stdout and "\u202e" not in done.stdout
    assert one_line(ESCAPES) in done.stdout and "bench/\\x1b[31mred" in done.stdout
    assert "[bold]x[/bold].yaml on" in done.stdout


@pytest.mark.parametrize("runs", [1, 1001])    # rich's table, and plain columns past 1000 rows
def test_compare_prints_names_without_their_control_characters(tmp_path, runs):
    names = NAMES + [f"filler{i}.yaml" for i in range(runs - 1)]
    for file, median in (("a.jsonl", 5.0), ("b.jsonl", 5.5)):
        (tmp_path / file).write_text("".join(json.dumps(result(n, median)) + "\n" for n in names))
    done = cubinrun("compare", "a.jsonl", "b.jsonl", cwd=tmp_path)
    assert done.returncode in (0, 5), done.stderr
    assert "\x1b" not in done.stdout and "\r" not in done.stdout and "\u202e" not in done.stdout
    assert "bench/\\x1b[31mred" in done.stdout and "[bold]x[/bold].yaml" in done.stdout
    assert "reduce<float>" in done.stdout
