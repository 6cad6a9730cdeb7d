"""Fixtures of the capture tests: the Triton hook as the captured program loads it."""
from __future__ import annotations

import pytest

from support.repo import REPO

HOOK = REPO / "cubinrun" / "capture" / "hook"


@pytest.fixture
def hook(monkeypatch):
    """cubinrun_triton_hook imported from the package's hook folder, with no
    capture installed before or after the test."""
    monkeypatch.syspath_prepend(str(HOOK))
    import cubinrun_triton_hook
    cubinrun_triton_hook._state = None
    yield cubinrun_triton_hook
    cubinrun_triton_hook._state = None
