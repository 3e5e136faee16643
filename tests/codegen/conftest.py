"""Fixtures of the code generator tests (one module per target, test_common.py for the shared layer)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ is not installed")


@pytest.fixture(scope="session")
def contract_set():
    from charter.contract.contractset import load_set

    cs = load_set(sorted((ROOT / "specs").rglob("*.yaml")), [ROOT / "specs"])
    assert not cs.diagnostics, cs.diagnostics
    return cs


def compile_and_run(source: str, folder: Path, *flags: str) -> list[str]:
    """Build one C++17 translation unit with g++ (warnings are errors) and return its stdout lines."""
    src = folder / "main.cpp"
    src.write_text(source, "utf-8")
    exe = folder / "main"
    done = subprocess.run([GXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", *flags, str(src), "-o", str(exe)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=60).stdout.splitlines()
