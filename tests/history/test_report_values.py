"""`history report` of what a store may hold: any finite time draws (1.7e308,
5e-324, 0, mixed; 1.7e308 made the axis overflow), checked in Chromium as in
test_report.py; the index lists points in numeric order with the
unit of its times, a series no run timed is `untimed` with no empty interval,
and one commit is "1 commit". `history add` refuses a `launch --dry-run`
results file (a real one, from a real process) in one line."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.browser_pages import opened
from support.cli import one_error_line, run
from support.historydata import add_args, result
from support.repo import CONFIGS, PACKAGE_PARENT

pytest.importorskip("alembic", reason="cubinrun history needs the history extra")
pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")

EXTREME = {"mixed.yaml": [1.0, 1.1, 1.7e308, 5e-324, 0.0, 2.0],
           "huge.yaml": [1.7e308] * 3 + [1.6e308] * 3,
           "tiny.yaml": [5e-324] * 6,
           "zero.yaml": [0.0] * 6}


def cubinrun(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    return subprocess.run([sys.executable, "-m", "cubinrun", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("values")
    db = str(folder / "h.sqlite")
    from cubinrun.cli import main

    def add(i: int, lines: list[dict]) -> None:
        path = folder / f"c{i}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        with pytest.raises(SystemExit) as done:
            main(add_args(path, i, db))
        assert done.value.code == 0
    for i in range(6):
        add(i, [result(name, values[i]) for name, values in EXTREME.items()]
            + [result("sizes.yaml", 3.0, point={"N": n}) for n in (1048576, 16777216, 262144)])
    add(6, [result("once.yaml", 4.0)])
    done = cubinrun("history", "report", "--db", db, "--branch", "main", "-o", folder / "site",
                    cwd=folder)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return folder / "site"


def page_of(site: Path, spec: str) -> Path:
    return next(p for p in (site / "series").iterdir() if f"<h1>{spec} " in p.read_text())


def numbers_in(svg: str) -> list[str]:
    return re.findall(r'(?:points|x|y|x1|x2|y1|y2|cx|cy|d)="([^"]*)"', svg)


def test_every_finite_time_draws_on_a_sane_axis(site):
    for spec in ("mixed.yaml", "huge.yaml", "tiny.yaml"):
        page = page_of(site, spec).read_text()
        chart = page[page.index('<svg class="chart"'):page.index("</svg>")]
        for value in numbers_in(chart):
            assert not re.search(r"nan|inf", value, re.I), (spec, value)
            for number in re.findall(r"-?\d+(?:\.\d+)?", value):
                assert -10 < float(number) < 1000, (spec, value)   # within the picture
    def ticks(spec: str, least: int = 2) -> list[float]:
        labels = re.findall(r'class="tick"[^>]*text-anchor="end">([^<]*)<',
                            page_of(site, spec).read_text())
        assert len(set(labels)) == len(labels) >= least, (spec, labels)
        return [float(label) for label in labels]
    # 5e-324 to 1.7e308: a log axis of decades
    assert "µs (log)" in page_of(site, "mixed.yaml").read_text()
    assert all(math.log10(t).is_integer() for t in ticks("mixed.yaml"))
    assert all(1e308 < t < math.inf for t in ticks("huge.yaml"))
    # the smallest float has no neighbours to tell apart: one label, not five alike
    assert all(0 < t < 1e-322 for t in ticks("tiny.yaml", 1))
    assert "No timed runs." in page_of(site, "zero.yaml").read_text()


def test_the_index_orders_points_by_number_and_names_its_unit(site):
    index = (site / "index.html").read_text()
    order = [int(n) for n in re.findall(r"sizes\.yaml \[N=(\d+)\]", index)]
    assert order == [262144, 1048576, 16777216]
    assert "<th>latest µs</th>" in index


def test_a_series_no_run_timed_is_untimed_without_an_empty_interval(site):
    index = (site / "index.html").read_text()
    row = next(r for r in index.split("<tr>") if "zero.yaml" in r)
    assert 'class="untimed">untimed<' in row
    page = page_of(site, "zero.yaml").read_text()
    assert "- - -" not in page and "untimed" in page


def test_one_commit_is_one_commit(site):
    page = page_of(site, "once.yaml").read_text()
    assert "1 commit ·" in page and "0 change points" in page and "1 commits" not in page


def test_the_extreme_pages_load_in_chromium_without_errors(site, browser):
    index, errors, _ = opened(browser, site / "index.html")
    assert errors == [] and index.locator("tbody tr").count() == len(EXTREME) + 4
    spark = index.locator("svg.spark polyline")
    assert spark.count() == len(EXTREME) + 4 - 1                # the untimed series has none
    for i in range(spark.count()):
        assert not re.search(r"nan|inf", spark.nth(i).get_attribute("points"), re.I)
    index.close()
    for spec, values in EXTREME.items():
        page, errors, _ = opened(browser, page_of(site, spec))
        assert errors == []
        timed = sum(1 for v in values if v)
        assert page.locator("svg.chart circle").count() == timed
        if timed:
            box = page.locator("svg.chart").bounding_box()
            for i in range(timed):
                dot = page.locator("svg.chart circle").nth(i).bounding_box()
                assert box["y"] <= dot["y"] <= box["y"] + box["height"], spec
        page.close()


def test_history_add_refuses_a_dry_run_results_file(tmp_path, capsys):
    dry = tmp_path / "dry.jsonl"
    done = cubinrun("launch", "--dry-run", CONFIGS / "vector_add.yaml", "--jsonl", dry,
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = str(tmp_path / "h.sqlite")
    done = cubinrun(*add_args(dry, 0, db), cwd=tmp_path)
    line = one_error_line(done.stderr)
    assert done.returncode == 2 and f"{dry}:1" in line and "--dry-run" in line
    assert "no timing" in line
    assert not os.path.exists(db) or run(capsys, "history", "list", "--db", db)[1].endswith(
        "0 series\n")
