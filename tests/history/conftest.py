"""Fixtures of the history tests: a headless Chromium for the report's pages."""
from __future__ import annotations

import shutil
import sys

import pytest


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright; the test skips where either is
    missing or Chromium does not start."""
    if sys.platform == "win32":
        pytest.skip("the browser test runs on Linux (Debian's chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="Playwright (test extra)")
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.skip("no Chromium (apt-get install chromium)")
    with playwright.sync_playwright() as driver:
        try:
            chromium = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        except Exception as exc:                        # noqa: BLE001 (Playwright's own errors)
            pytest.skip(f"Chromium does not start here: {str(exc).splitlines()[0]}")
        yield chromium
        chromium.close()
