"""The machine's C++ compiler, for what charter compiles at run time: checker libraries
(charter.engines.library) and the standalone kernel module (charter.codegen.bindings.standalone)."""

from __future__ import annotations

import os
import shutil
import subprocess


class ToolchainError(RuntimeError):
    """No C++ compiler, or it cannot be run."""


def compiler() -> str:
    """The C++17 compiler: CXX, else c++, found on PATH."""
    cxx = shutil.which(os.environ.get("CXX", "c++"))
    if cxx is None:
        raise ToolchainError(f"no C++17 compiler: {os.environ.get('CXX', 'c++')} is not on PATH (set CXX)")
    return cxx


def compiler_version(cxx: str) -> str:
    """What `cxx --version` prints: part of the identity of anything it builds."""
    try:
        done = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"cannot run {cxx} --version: {exc}") from exc
    return done.stdout
