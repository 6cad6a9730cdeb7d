"""`cubinrun history report`: the static site, opened from file:// in a
real headless Chromium (Debian's `chromium` through Playwright): the index
loads fast with no console error and lists every series with its verdict,
its filter works, and a series page shows its change point, its failed check
and the commit links. Skipped where Playwright or Chromium is missing (.ci/run
installs Chromium); on Windows the browser test skips, the build is still tested."""
from __future__ import annotations

import pytest
from support.historydata import fill_store, sha
from support.browser_pages import opened
from support.cli import one_error_line, run

pytest.importorskip("alembic", reason="cubinrun history needs the history extra")
pytest.importorskip("ruptures", reason="cubinrun history needs the history extra")

SERIES, COMMITS = 12, 150
URL = "https://example.org/repo/commit/{commit}"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    db = "sqlite:///" + str(folder / "h.sqlite")
    fill_store(db, SERIES, COMMITS)
    from cubinrun.cli import main
    with pytest.raises(SystemExit) as done:
        main(["history", "report", "--db", db, "--branch", "main", "-o", str(folder / "site"),
              "--commit-url", URL, "--title", "kernels"])
    assert done.value.code == 0
    return folder / "site", db


def test_the_report_has_an_index_and_a_page_per_series(report):
    site, _ = report
    index = (site / "index.html").read_text()
    assert index.count("<tr>") == SERIES + 1 and index.count("<svg class=\"spark\"") == SERIES
    assert len(list((site / "series").glob("*.html"))) == SERIES
    assert "http" not in index.replace(URL.split("{")[0], "")    # nothing fetched from outside


def test_an_existing_report_is_replaced_only_with_force(report, capsys):
    site, db = report
    code, _, err = run(capsys, "history", "report", "--db", db, "--branch", "main", "-o", site)
    assert code == 2 and "pass --force" in one_error_line(err)


def test_the_index_loads_in_chromium_with_every_series(report, browser):
    site, _ = report
    page, errors, seconds = opened(browser, site / "index.html")
    assert errors == [] and seconds < 2
    rows = page.locator("tbody tr")
    assert rows.count() == SERIES
    # the regression at the newest commit first, then the failing check
    assert rows.nth(0).locator(".REGRESSION").count() == 1 and "k000" in rows.nth(0).inner_text()
    assert "k002" in rows.nth(1).inner_text() and "FAILING" in rows.nth(1).inner_text()
    page.fill("#filter", "k001")
    assert [rows.nth(i).is_visible() for i in range(SERIES)].count(True) == 1
    page.close()


def test_a_series_page_marks_its_change_and_links_its_commits(report, browser):
    site, _ = report
    index, _, _ = opened(browser, site / "index.html")
    index.click("text=configs/k001.yaml")
    index.wait_for_load_state("load")
    assert "configs/k001.yaml" in index.title()
    change = index.locator("svg.chart text.cp-label")
    assert change.count() == 1 and change.text_content().startswith("+5.")
    first_link = index.locator("tbody a").first
    assert first_link.get_attribute("href") == URL.replace("{commit}", sha(COMMITS - 1))
    assert index.locator("svg.chart circle").count() == COMMITS
    index.close()
    failing, errors, _ = opened(browser, next(p for p in (site / "series").iterdir()
                                              if "k002" in p.read_text()))
    assert errors == [] and failing.locator("svg.chart path.fail").count() == 1
    failing.close()
