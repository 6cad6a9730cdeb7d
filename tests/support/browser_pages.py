"""A page of a static site opened in the headless Chromium of the `browser`
fixture (tests/history/conftest.py), as the history report's tests read it."""
from __future__ import annotations

import time


def opened(browser, path):
    """A page at file://path, with the console's errors collected."""
    page = browser.new_page(viewport={"width": 1100, "height": 800})
    errors = []
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    started = time.perf_counter()
    page.goto(path.as_uri(), wait_until="load")
    return page, errors, time.perf_counter() - started
