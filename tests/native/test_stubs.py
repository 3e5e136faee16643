"""src/charter/_native.pyi is what nanobind's stubgen writes for the installed charter._native."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_committed_stub_matches_stubgen(tmp_path):
    out = tmp_path / "_native.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-m", "charter._native", "-o", str(out), "-q"],
                   check=True, capture_output=True, timeout=120)
    committed = (ROOT / "src" / "charter" / "_native.pyi").read_text()
    assert out.read_text() == committed, "regenerate: python -m nanobind.stubgen -m charter._native " \
                                         "-o src/charter/_native.pyi"
