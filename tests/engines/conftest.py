"""Fixtures for charter.engines: the shipped contracts and the real SmolLM2 checkpoint."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

SMOLLM2 = ROOT / "specs" / "artifacts" / "smollm2-135m-instruct-q4_1.yaml"
TINY_ST = ROOT / "specs" / "artifacts" / "tiny-llama-safetensors.yaml"


@pytest.fixture(scope="module")
def smollm2_set():
    from charter.contract.contractset import load_set

    cs = load_set([SMOLLM2], [ROOT / "specs"])
    assert cs.ok, cs.diagnostics
    return cs


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty charter cache (XDG_CACHE_HOME) for this test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"
