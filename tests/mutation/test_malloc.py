"""Note [Header-sized buffers]: the battery's malloc policy is taken where glibc is the C library,
and asked for nowhere else."""

from __future__ import annotations

import platform
import subprocess
import sys

from charter.mutation import malloc


def test_glibc_takes_the_policy():
    script = "from charter.mutation.malloc import keep_freed_buffers; print(keep_freed_buffers())"
    said = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert said == str(glibc)


def test_other_systems_are_left_alone(monkeypatch):
    monkeypatch.setattr(malloc.sys, "platform", "darwin")
    assert malloc.keep_freed_buffers() is False
