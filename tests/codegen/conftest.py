"""Fixtures of the code generator tests (one module per target, test_common.py for the shared layer)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def compile_and_run(source: str, folder: Path, *flags: str) -> list[str]:
    """Build one C++17 translation unit with the compiler charter uses (charter.toolchain; warnings
    are errors) and return its stdout lines. A machine without one fails here: make install needs it."""
    from charter.toolchain import compiler

    src = folder / "main.cpp"
    src.write_text(source, "utf-8")
    exe = folder / "main"
    done = subprocess.run([compiler(), "-std=c++17", "-Wall", "-Wextra", "-Werror", *flags, str(src), "-o", str(exe)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True, timeout=60).stdout.splitlines()
