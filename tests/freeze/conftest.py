from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _checker_cache(tmp_path_factory, monkeypatch):
    """Checkers rendered or compiled from frozen contracts go to a per-session cache, not the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))
