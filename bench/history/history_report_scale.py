"""`cubinrun history report` at scale: 100 series x 1000 commits (the
issue's size), timed as a user runs it (a fresh process, from its start to
the last page written), then the index opened from file:// in headless
Chromium (Playwright, Debian's chromium), timed to its load event, with its
console errors counted. With --screenshot DIR, a small PNG of a series page
goes there (docs/history-report.png).

    python bench/history/history_report_scale.py [--series 100] [--commits 1000] [--screenshot docs]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from support.historydata import fill_store  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=100)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--screenshot", type=Path, help="folder for history-report.png")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="cubinrun-history-"))
    try:
        db = "sqlite:///" + str(folder / "h.sqlite")
        started = time.perf_counter()
        fill_store(db, args.series, args.commits)
        print(f"store: {args.series} series x {args.commits} commits filled in "
              f"{time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cubinrun", "history", "report", "--db", db,
                        "--branch", "main", "-o", str(folder / "site"), "--commit-url",
                        "https://github.com/OWNER/REPO/commit/{commit}"], check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        size = sum(p.stat().st_size for p in (folder / "site").rglob("*.html"))
        print(f"report: built in {time.perf_counter() - started:.1f} s, {size / 2**20:.1f} MiB")
        browse(folder / "site", args.screenshot)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def browse(site: Path, screenshot: Path | None) -> None:
    from playwright.sync_api import sync_playwright
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=shutil.which("chromium"),
                                         args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1000, "height": 640})
        errors = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        for name in ("index.html", "index.html"):           # cold, then warm
            started = time.perf_counter()
            page.goto((site / name).as_uri(), wait_until="load")
            print(f"index: loaded in {time.perf_counter() - started:.2f} s, "
                  f"{page.locator('tbody tr').count()} rows, {len(errors)} console errors")
        if screenshot:
            page.click("text=configs/k001.yaml")
            page.wait_for_load_state("load")
            page.screenshot(path=str(screenshot / "history-report.png"))
            print(f"screenshot: {screenshot / 'history-report.png'}")
        browser.close()


if __name__ == "__main__":
    main()
