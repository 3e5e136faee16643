"""Documentation that is an interface: every diagnostic code is documented."""

from __future__ import annotations

import pytest

from charter.diagnostics import Code
from tests.conftest import ROOT

DIAGNOSTICS = (ROOT / "docs" / "diagnostics.md").read_text()


@pytest.mark.parametrize("code", list(Code), ids=lambda c: c.value)
def test_every_code_is_documented(code):
    assert f"| `{code.value}` |" in DIAGNOSTICS
