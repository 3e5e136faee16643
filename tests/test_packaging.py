"""Package metadata: the project URLs name documentation that exists (pyproject.toml, [project.urls])."""

from __future__ import annotations

import importlib.metadata
import tomllib

from tests.conftest import ROOT

URLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]


def test_project_urls_name_shipped_documents():
    assert {"Documentation", "Tutorial"} <= set(URLS)
    for label, target in URLS.items():
        assert (ROOT / target).is_file(), f"[project.urls] {label} = {target!r} names no file of the source tree"


def test_installed_metadata_carries_them():
    installed = importlib.metadata.metadata("charter").get_all("Project-URL") or []
    assert sorted(installed) == sorted(f"{label}, {target}" for label, target in URLS.items())
